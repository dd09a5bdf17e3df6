"""The target seam: what one kind of target (local, ssh, runpod, …) tells and does.

A kind is one module that makes an object of this protocol and registers it
(`targets/registry.py`). Above `targets/`, nothing asks which class a target's settings are:
it asks the target's kind.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Protocol

from overbrainer.config.settings import Engine, Runtime
from overbrainer.config.target_settings import SettingsKind, TargetSettings
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError
from overbrainer.targets.executor import Executor
from overbrainer.targets.machine import MachineKind


class TargetKind(MachineKind, Protocol):
    """One kind of target: its `[targets.<n>]` settings, what flows may ask, its executor, and
    a machine per job (`MachineKind`)."""

    @property
    def name(self) -> str:
        """The `kind = "…"` of its `[targets.<n>]` sections."""
        ...

    @property
    def settings(self) -> SettingsKind:
        """Its `[targets.<n>]` table: read, checked and shown by config (registered with it by
        `registry.register`)."""
        ...

    @property
    def on_this_machine(self) -> bool:
        """Whether its jobs run here, in the project's own run directory."""
        ...

    @property
    def makes_pod(self) -> bool:
        """Whether a machine is made for each job (then the job's own code provisions it and
        `open` is not used: the pod's set-up needs the job's record)."""
        ...

    def runtime(self, target: TargetSettings) -> Runtime:
        """Where the job's runtime lives: natively (a venv) or in a container."""
        ...

    def engine(self, target: TargetSettings) -> Engine | None:
        """The container engine its container runtime uses (None: the default, docker)."""
        ...

    def check(self, name: str, target: TargetSettings) -> None:
        """Refuse (ConfigError) settings that cannot work, before anything connects."""
        ...

    def open(
        self,
        name: str,
        target: TargetSettings,
        runs_root: Path,
        interrupt: Interrupt,
        interrupted: Callable[[], OverbrainerError],
    ) -> AbstractAsyncContextManager[Executor]:
        """The target's executor, connected (the connection raced against `interrupt`:
        `interrupted()` is raised when it wins); leaving it closes what it opened."""
        ...
