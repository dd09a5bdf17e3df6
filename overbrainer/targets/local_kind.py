"""`kind = "local"`: this machine, the job in the project's own `runs/<id>`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import ClassVar

import attrs

from overbrainer.config.settings import Engine, Runtime
from overbrainer.config.target_settings import SettingsKind, Shown, TargetSettings
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError
from overbrainer.targets.executor import Executor
from overbrainer.targets.host_machine import HostMachine, host_runtime
from overbrainer.targets.host_settings import host_problems, runtime_problems, runtime_summary
from overbrainer.targets.local_executor import LocalExecutor
from overbrainer.targets.machine import JobOpening, Machine, RecordedJob


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
    on_this_machine: bool = True
    makes_pod: bool = False

    def runtime(self, target: TargetSettings) -> Runtime:
        """The configured runtime (native or a container)."""
        return _local(target).runtime

    def engine(self, target: TargetSettings) -> Engine | None:
        """The configured engine (None: docker)."""
        return _local(target).engine

    def check(self, name: str, target: TargetSettings) -> None:
        """Nothing to refuse: the settings reader checked the fields."""

    @contextlib.asynccontextmanager
    async def open(
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
    async def open_machine(self, opening: JobOpening) -> AsyncIterator[Machine]:
        """This machine for a new job: checked, then its record made (nothing to claim)."""
        executor = LocalExecutor(opening.local_root)
        if opening.check is not None:
            await opening.check(executor)
        await opening.create(executor.workdir, None)
        yield HostMachine(
            executor,
            host_runtime(_local(opening.target)),
            removes_container=opening.needs.remove_container,
        )

    @contextlib.asynccontextmanager
    async def reach_machine(self, recorded: RecordedJob) -> AsyncIterator[Machine]:
        """This machine again, for a recorded job."""
        machine = HostMachine(
            LocalExecutor(recorded.job_dir.parent), host_runtime(_local(recorded.target))
        )
        machine.job = recorded.job
        yield machine

    def describe(self, job_dir: Path) -> str | None:
        """Nothing to add: the job is a process here."""
        return None


LOCAL = LocalKind()
"""The local kind (registered by `targets/registry.py`)."""
