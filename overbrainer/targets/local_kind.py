"""`kind = "local"`: this machine, the job in the project's own `runs/<id>`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import attrs

from overbrainer.config.settings import Engine, LocalTarget, Runtime, Target
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError
from overbrainer.targets.executor import Executor
from overbrainer.targets.local_executor import LocalExecutor


def _local(target: Target) -> LocalTarget:
    assert isinstance(target, LocalTarget), f"a {target.kind} target is not local"
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


LOCAL = LocalKind()
"""The local kind (registered by `targets/registry.py`)."""
