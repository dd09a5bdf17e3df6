"""The one registry of target kinds: `kind = "…"` → its TargetKind.

Registering a kind also registers its settings with config (`config.target_settings`), so
`[targets.<n>] kind = "<name>"` reads into its class, is checked and shown by it. config knows
no kind by default: a process loads this module before config needs a kind (`run_flow` has
config call `ensure_kinds` then, completion calls it, tests/conftest.py imports it).
"""

from __future__ import annotations

from pathlib import Path

import attrs

from overbrainer.config.target_settings import (
    TargetSettings,
    add_settings_kind,
    remove_settings_kind,
)
from overbrainer.model.errors import UsageError
from overbrainer.model.json_values import JsonValue
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
    add_settings_kind(kind.settings)


def unregister(name: str) -> None:
    """Forget the kind `name` (a test's toy kind)."""
    del _KINDS[name]
    remove_settings_kind(name)


def kind_named(name: str) -> TargetKind:
    """The kind registered as `name`; UsageError when none is."""
    found = _KINDS.get(name)
    if found is None:
        raise UsageError(f"unknown target kind `{name}`")
    return found


def kind_of(target: TargetSettings) -> TargetKind:
    """The kind of a target's settings (by their `kind`)."""
    return kind_named(target.kind)


def describe_job(job_dir: Path) -> str | None:
    """What the kinds say of a recorded job's machine from its local files (`runs ls`: a pod's
    state, a cluster job's); None when none has words for it. Each kind reads only its own
    files, so a job's target may be gone from the settings."""
    for kind in _KINDS.values():
        words = kind.describe(job_dir)
        if words is not None:
            return words
    return None


@attrs.frozen
class JobMachine:
    """What the kind `kind` says of a recorded job's machine: its `runs ls` words and, where
    it has them, the facts behind them as JSON data."""

    kind: str
    words: str
    details: dict[str, JsonValue] | None


def job_machine(job_dir: Path) -> JobMachine | None:
    """`describe_job` with the kind that spoke and its details (`runs ls --json`)."""
    for kind in _KINDS.values():
        words = kind.describe(job_dir)
        if words is not None:
            return JobMachine(kind.name, words, kind.details(job_dir))
    return None


def ensure_kinds() -> None:
    """Have the built-in kinds registered, and so their settings with config (importing this
    module already did it: the call is what a command's entry names)."""
    for builtin in (LOCAL, SSH, RUNPOD, RAY):
        if builtin.name not in _KINDS:
            register(builtin)


ensure_kinds()
