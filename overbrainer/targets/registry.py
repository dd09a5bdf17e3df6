"""The one registry of target kinds: `kind = "…"` → its TargetKind.

Registering a kind also tells the config reader its settings class, so
`[targets.<n>] kind = "<name>"` reads into it (config sits below targets and has no registry
of its own beyond that hook).
"""

from __future__ import annotations

from overbrainer.config.load import add_target_kind, remove_target_kind
from overbrainer.config.settings import Target
from overbrainer.model.errors import UsageError
from overbrainer.targets.kind import TargetKind
from overbrainer.targets.local_kind import LOCAL
from overbrainer.targets.ray.kind import RAY
from overbrainer.targets.runpod.kind import RUNPOD
from overbrainer.targets.ssh_kind import SSH

_KINDS: dict[str, TargetKind] = {}


def register(kind: TargetKind) -> None:
    """Make `kind` known by its name (to flows and to the config reader)."""
    if kind.name in _KINDS:
        raise ValueError(f"target kind `{kind.name}` is already registered")
    _KINDS[kind.name] = kind
    add_target_kind(kind.name, kind.settings_type)


def unregister(name: str) -> None:
    """Forget the kind `name` (a test's toy kind)."""
    del _KINDS[name]
    remove_target_kind(name)


def kind_named(name: str) -> TargetKind:
    """The kind registered as `name`; UsageError when none is."""
    found = _KINDS.get(name)
    if found is None:
        raise UsageError(f"unknown target kind `{name}`")
    return found


def kind_of(target: Target) -> TargetKind:
    """The kind of a target's settings (by their `kind`)."""
    return kind_named(target.kind)


for _builtin in (LOCAL, SSH, RUNPOD, RAY):
    register(_builtin)
