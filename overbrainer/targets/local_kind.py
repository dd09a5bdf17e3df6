"""`kind = "local"`: this machine, the job in the project's own `runs/<id>`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import attrs

from overbrainer.config.settings import Engine, LocalTarget, Runtime, SshTarget, Target
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError
from overbrainer.targets.executor import Executor
from overbrainer.targets.host_machine import HostMachine, HostRuntime
from overbrainer.targets.local_executor import LocalExecutor
from overbrainer.targets.machine import JobOpening, Machine, RecordedJob


def _local(target: object) -> LocalTarget:
    assert isinstance(target, LocalTarget), f"{target!r} is not a local target"
    return target


@attrs.frozen
class LocalKind:
    """This machine: nothing to connect to, nothing to provision."""

    name: str = LocalTarget.kind
    settings_type: type[object] = LocalTarget
    on_this_machine: bool = True
    makes_pod: bool = False

    def runtime(self, target: Target) -> Runtime:
        """The configured runtime (native or a container)."""
        return _local(target).runtime

    def engine(self, target: Target) -> Engine | None:
        """The configured engine (None: docker)."""
        return _local(target).engine

    def check(self, name: str, target: Target) -> None:
        """Nothing to refuse: the settings reader checked the fields."""

    @contextlib.asynccontextmanager
    async def open(
        self,
        name: str,
        target: Target,
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


def host_runtime(target: LocalTarget | SshTarget) -> HostRuntime:
    """How a local or SSH target runs its jobs."""
    return HostRuntime(
        target.runtime, target.engine, target.image, target.venv, target.gpus, target.container_user
    )


LOCAL = LocalKind()
"""The local kind (registered by `targets/registry.py`)."""
