"""The target a run trains on: its settings checked, and its executor opened and connected."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import attrs

from overbrainer.config.settings import Settings
from overbrainer.config.target_settings import TargetSettings
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError, UsageError
from overbrainer.system.sampler import LocalSampler
from overbrainer.targets import Executor, ProbeSampler, Target, as_builtin, kind_of

HostTarget = TargetSettings
"""A target overbrainer reaches as it is (its kind makes no pod): opened by `open_executor`."""
TrainTarget = Target


def run_target(settings: Settings, name: str, *, keep_pod: bool = False) -> TrainTarget:
    """The `[targets.<name>]` a training run uses, checked by its kind."""
    target = settings.targets.get(name)
    if target is None:
        raise UsageError(f"unknown target `{name}`")
    kind = kind_of(target)
    if keep_pod and not kind.makes_pod:
        raise UsageError("--keep-pod only applies to a runpod target")
    kind.check(name, target)
    return as_builtin(target)


@contextlib.asynccontextmanager
async def open_executor(
    name: str,
    target: HostTarget,
    runs_root: Path,
    interrupt: Interrupt,
    interrupted: Callable[[], OverbrainerError],
) -> AsyncIterator[Executor]:
    """The target's executor, connected by its kind (the connection raced against Ctrl-C)."""
    async with kind_of(target).open(name, target, runs_root, interrupt, interrupted) as executor:
        yield executor


@attrs.frozen
class Where:
    """Where a run lives on its executor: its directory there and the shared model cache."""

    remote_dir: str
    cache: str


def sampler_for(executor: Executor, remote_dir: str) -> LocalSampler | ProbeSampler:
    """Samples of the job's machine: psutil/NVML here, the probe script over SSH."""
    if executor.local:
        return LocalSampler(Path(remote_dir))
    return ProbeSampler(executor, remote_dir)
