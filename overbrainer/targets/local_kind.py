"""`kind = "local"`: this machine, the job in the project's own `runs/<id>`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import ClassVar

import attrs

from overbrainer.config.settings import Engine, Runtime, Settings
from overbrainer.config.target_settings import SettingsKind, Shown, TargetSettings
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError
from overbrainer.model.json_values import JsonValue
from overbrainer.targets.executor import Executor, JobRef
from overbrainer.targets.host_jobs import host_checks, left_local_job, local_alive
from overbrainer.targets.host_machine import HostMachine, host_runtime
from overbrainer.targets.host_settings import host_problems, runtime_problems, runtime_summary
from overbrainer.targets.kind import JobChecks, refuse_keep
from overbrainer.targets.local_executor import LocalExecutor
from overbrainer.targets.machine import JobNeeds, JobOpening, Machine, RecordedJob


@attrs.frozen
class LocalTarget:
    """`[targets.<n>] kind = "local"`: this machine, in the project's `runs/`."""

    runtime: Runtime
    engine: Engine | None = None
    image: str | None = None
    venv: str | None = None
    gpus: str = "auto"
    """The container's GPUs: `auto` (all when `nvidia-smi` lists one), `all`, `none`, `0,1`."""
    container_user: str = "auto"
    """Who the container's job runs as: `auto` (the target's user), `image`, or `UID:GID`."""

    kind: ClassVar[str] = "local"


def _local(target: TargetSettings) -> LocalTarget:
    assert isinstance(target, LocalTarget), f"a {target.kind} target is not local"
    return target


def _summary(target: TargetSettings, shown: Shown) -> list[tuple[str, str]]:
    return [("", f"local, {runtime_summary(_local(target), shown.axolotl)}")]


LOCAL_SETTINGS = SettingsKind(
    name=LocalTarget.kind,
    settings_type=LocalTarget,
    summary=_summary,
    problems=lambda name, target: host_problems(name, _local(target)),
    range_problems=lambda name, target: runtime_problems(name, _local(target)),
)
"""How config reads, checks and shows a local target."""


@attrs.frozen
class LocalKind:
    """This machine: nothing to connect to, nothing to provision."""

    name: str = LocalTarget.kind
    settings: SettingsKind = LOCAL_SETTINGS
    makes_pod: bool = False

    def check(
        self, name: str, target: TargetSettings, needs: JobNeeds, settings: Settings | None = None
    ) -> None:
        """Refuse `--keep-pod`; nothing else: the settings reader checked the fields."""
        refuse_keep(needs)

    def checks(self, target: TargetSettings) -> JobChecks:
        """A native job's `axolotl` here; a container job's engine on this PATH."""
        return host_checks(_local(target), here=True)

    def left_job(self, target: TargetSettings, job_dir: Path, run_id: str) -> JobRef | None:
        """The job its `job.pid` names, when it started."""
        return left_local_job(_local(target), job_dir, run_id)

    def alive(self, job_dir: Path, job: JobRef) -> bool | None:
        """Whether its process group still runs here."""
        return local_alive(job_dir, job)

    async def quote(self, settings: Settings, target: TargetSettings, model: Path) -> str | None:
        """Nothing to pay for."""
        return None

    @contextlib.asynccontextmanager
    async def connect(
        self,
        name: str,
        target: TargetSettings,
        runs_root: Path,
        interrupt: Interrupt,
        interrupted: Callable[[], OverbrainerError],
    ) -> AsyncIterator[Executor]:
        """The local executor over the project's `runs/`."""
        yield LocalExecutor(runs_root)

    @contextlib.asynccontextmanager
    async def open(self, opening: JobOpening) -> AsyncIterator[Machine]:
        """This machine for a new job: checked, then its record made (nothing to claim)."""
        executor = LocalExecutor(opening.local_root)
        if opening.check is not None:
            await opening.check(executor)
        await opening.create(opening.needs.nested_in or executor.workdir, None)
        yield HostMachine(
            executor,
            host_runtime(_local(opening.target)),
            removes_container=opening.needs.remove_container,
        )

    @contextlib.asynccontextmanager
    async def reach(self, recorded: RecordedJob) -> AsyncIterator[Machine]:
        """This machine again, for a recorded job."""
        machine = HostMachine(
            LocalExecutor(recorded.job_dir.parent), host_runtime(_local(recorded.target))
        )
        machine.job = recorded.job
        yield machine

    def describe(self, job_dir: Path) -> str | None:
        """Nothing to add: the job is a process here."""
        return None

    def details(self, job_dir: Path) -> dict[str, JsonValue] | None:
        """Nothing to add: the job is a process here."""
        return None


LOCAL = LocalKind()
"""The local kind (registered by `targets/registry.py`)."""
