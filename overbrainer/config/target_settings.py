"""The `[targets.<n>]` tables: what config needs of each kind, which the kinds register.

config knows no kind of its own: `targets/registry.py` adds each kind's `SettingsKind`, so
the reader, the checks and `config show` ask the registered kind of a table by its `kind`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import ClassVar, Protocol

import attrs

RECONNECT_SECS = 300.0
"""The default outage a follower rides out: 5 minutes."""

NOT_CHECKED = "not checked"
"""The `axolotl` of a target that `config check` did not look for (SSH: it does not connect)."""


class TargetSettings(Protocol):
    """A `[targets.NAME]` table read into its kind's attrs class."""

    kind: ClassVar[str]


@attrs.frozen
class Shown:
    """What `config show` found beyond the settings, for a target's lines."""

    axolotl: str | None = NOT_CHECKED
    """The path of the target's `axolotl`; None: looked for and not found."""
    ssh_client_env: str | None = None
    """`OVERBRAINER_SSH_CLIENT` as set (it overrides a target's `ssh_client`)."""


def _no_problems(name: str, target: TargetSettings) -> list[str]:
    return []


def _default_reconnect(target: TargetSettings) -> float:
    return RECONNECT_SECS


@attrs.frozen
class SettingsKind:
    """What config needs of a kind to read, check and show its `[targets.NAME]` tables."""

    name: str
    """The `kind = "…"` of its tables."""
    settings_type: type[TargetSettings]
    """The attrs class a table is read into."""
    summary: Callable[[TargetSettings, Shown], list[tuple[str, str]]]
    """`config show`'s lines for a table: (key under `targets.NAME`, "" for the table's own
    line, such as ".ssh_client"; the value shown)."""
    problems: Callable[[str, TargetSettings], list[str]] = _no_problems
    """Its checks in the reference's order (after `[training]`'s): `targets.NAME.key: …`."""
    range_problems: Callable[[str, TargetSettings], list[str]] = _no_problems
    """Our own range checks (after `[pipeline]`'s), in the same wording."""
    reconnect_secs: Callable[[TargetSettings], float] = _default_reconnect
    """How long a follower of a job on such a target rides out a lost connection."""


_KINDS: dict[str, SettingsKind] = {}
_LOADERS: list[Callable[[], None]] = []
_LOADING = threading.RLock()


def load_kinds_on_use(load: Callable[[], None]) -> None:
    """Have `load` register the kinds the first time config needs one: a command's entry sets
    it (config imports no kind), so a command that reads no target never imports them."""
    _LOADERS[:] = [load]


def _kinds() -> dict[str, SettingsKind]:
    with _LOADING:  # the TUI reads settings in worker threads: none sees a half-loaded registry
        while _LOADERS:
            _LOADERS.pop()()
    return _KINDS


def add_settings_kind(kind: SettingsKind) -> None:
    """Read `[targets.<n>] kind = "<name>"` with `kind` (targets' registry calls it)."""
    known = _KINDS.get(kind.name)
    if known is not None and known != kind:
        raise ValueError(
            f"target kind `{kind.name}` is already read into {known.settings_type.__name__}"
        )
    _KINDS[kind.name] = kind


def remove_settings_kind(name: str) -> None:
    """Stop reading `kind = "<name>"` (a test's toy kind goes again)."""
    _KINDS.pop(name, None)


def settings_kinds() -> Mapping[str, SettingsKind]:
    """The registered kinds by name, in the order they were added."""
    return MappingProxyType(_kinds())


def settings_kind(target: TargetSettings) -> SettingsKind:
    """The registered kind of a table read by `load_settings` (so registered)."""
    return _kinds()[target.kind]


def reconnect_secs(target: TargetSettings | None) -> float:
    """How long a follower of a job on `target` keeps trying to reach it (the default for a
    target that sets none, or one no longer configured)."""
    if target is None:
        return RECONNECT_SECS
    kind = _kinds().get(target.kind)
    return RECONNECT_SECS if kind is None else kind.reconnect_secs(target)
