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

import attrs

from overbrainer.config.settings import Settings
from overbrainer.config.target_settings import SettingsKind, TargetSettings
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError, UsageError
from overbrainer.targets.executor import Executor, JobRef
from overbrainer.targets.machine import JobNeeds, MachineKind

KEEP_REFUSED = "--keep-pod only applies to a runpod target"


def refuse_keep(needs: JobNeeds) -> None:
    """Refuse `--keep-pod` (UsageError, exit 2) on a kind that makes no machine to keep."""
    if needs.keep:
        raise UsageError(KEEP_REFUSED)


@attrs.frozen
class JobChecks:
    """What to check of a target before a job starts on it, and where."""

    axolotl: bool = False
    """The job runs the machine's own `axolotl` (natively): look for it, and a GPU, first."""
    here: bool = False
    """The machine is this one: its `axolotl` can be looked for without connecting."""
    engine: str | None = None
    """The container engine the job needs on this machine's PATH (a container run here)."""
    venv: str | None = None
    """Where that `axolotl` is: the target's `venv` (`~/` is the machine user's home); None:
    on the machine's PATH."""


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
    def makes_pod(self) -> bool:
        """Whether a machine is made for each job (then the job's own code provisions it and
        `open` is not used: the pod's set-up needs the job's record)."""
        ...

    def check(
        self, name: str, target: TargetSettings, needs: JobNeeds, settings: Settings | None = None
    ) -> None:
        """Refuse (exit 2) settings that cannot work, before anything connects: what `needs`
        asks that the kind cannot give (`--keep-pod` of a machine it does not make), and with
        `settings`, a missing account (the Runpod key; None: checked when the machine opens)."""
        ...

    def checks(self, target: TargetSettings) -> JobChecks:
        """What to check before a job on `target`: its `axolotl`, this machine's engine."""
        ...

    def left_job(self, target: TargetSettings, job_dir: Path, run_id: str) -> JobRef | None:
        """The job a record left `preparing` did start, as found from here (its `job.pid` in
        `job_dir`); None: it did not, or only its machine could say."""
        ...

    def alive(self, job_dir: Path, job: JobRef) -> bool | None:
        """Whether a recorded job is running now, found from here without connecting; None:
        only its record can say."""
        ...

    async def quote(self, settings: Settings, target: TargetSettings, model: Path) -> str | None:
        """The confirmation's line on what a job serving `model` costs to start (a new pod's
        price), before anything paid starts; None: nothing to say."""
        ...

    def connect(
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
