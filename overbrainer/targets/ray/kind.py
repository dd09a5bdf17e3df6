"""`kind = "ray"`: a job per run submitted to a Ray cluster (KubeRay, Anyscale, `ray up`), its
files on shared storage. The kind opens a `RayMachine` per job; it has no executor.

The registry imports this module in every command: the client, storage (fsspec) and machine
modules (about 100 ms of imports) load only when a job opens a machine."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from overbrainer.config.errors import ConfigError
from overbrainer.config.settings import Engine, Runtime
from overbrainer.config.target_settings import SettingsKind, TargetSettings
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError, UsageError
from overbrainer.targets.executor import Executor, JobError
from overbrainer.targets.ray.settings import RAY_SETTINGS, RayTarget, narrow, problems

if TYPE_CHECKING:
    from overbrainer.targets.machine import JobOpening, Machine, RecordedJob


def refuse_problems(name: str, target: RayTarget) -> None:
    """ConfigError (exit 2) with the table's first problem, if it has one."""
    found = problems(name, target)
    if found:
        raise ConfigError(found[0])


@attrs.frozen
class RayKind:
    """A Ray cluster reached through its Jobs API; each job is one submission."""

    name: str = RayTarget.kind
    settings: SettingsKind = RAY_SETTINGS
    on_this_machine: bool = False
    makes_pod: bool = False

    def runtime(self, target: TargetSettings) -> Runtime:
        """Native: the job runs in the cluster's own environment."""
        return Runtime.NATIVE

    def engine(self, target: TargetSettings) -> Engine | None:
        """None: no container of ours."""
        return None

    def check(self, name: str, target: TargetSettings) -> None:
        """Refuse a table that cannot work, before anything connects (exit 2)."""
        refuse_problems(name, narrow(target))

    def open(
        self,
        name: str,
        target: TargetSettings,
        runs_root: Path,
        interrupt: Interrupt,
        interrupted: Callable[[], OverbrainerError],
    ) -> contextlib.AbstractAsyncContextManager[Executor]:
        """None: a Ray target runs jobs through its machine (`open_machine`)."""
        raise UsageError(f"target `{name}` (kind ray) runs jobs only through the job lifecycle")

    @contextlib.asynccontextmanager
    async def open_machine(self, opening: JobOpening) -> AsyncIterator[Machine]:
        """The cluster, reached (its version asked: the address and token are checked before
        anything is written), then the job's record made with R on the storage."""
        # The client, its storage and fsspec load here, not with the registry: every command
        # imports the registry, few use a Ray target.
        from overbrainer.targets.ray.connect import open_cluster
        from overbrainer.targets.ray.machine import RayMachine
        from overbrainer.targets.ray.storage import Storage, storage_claim

        target = narrow(opening.target)
        refuse_problems(opening.target_name, target)
        storage = Storage(target.storage)
        async with open_cluster(opening.target_name, target) as api:
            reached = await opening.interrupt.race(api.version)
            if reached is None:
                raise opening.interrupted()
            await opening.create(storage.root, storage_claim(storage))
            yield RayMachine(target, api, storage)

    @contextlib.asynccontextmanager
    async def reach_machine(self, recorded: RecordedJob) -> AsyncIterator[Machine]:
        """The cluster of a recorded job; JobError when the cluster no longer knows the job."""
        from overbrainer.targets.ray.connect import open_cluster
        from overbrainer.targets.ray.errors import RayJobMissing
        from overbrainer.targets.ray.machine import RayMachine
        from overbrainer.targets.ray.storage import Storage

        target = narrow(recorded.target)
        storage = Storage(target.storage)
        async with open_cluster(recorded.target_name, target) as api:
            machine = RayMachine(target, api, storage, recorded.job)
            try:
                await api.status(recorded.job.ref or "")
            except RayJobMissing as error:
                raise JobError(
                    f"{error.message}: it was deleted, or the cluster restarted"
                ) from None
            yield machine

    def describe(self, job_dir: Path) -> str | None:
        """`ray <submission id>`, from the run's record."""
        try:
            record = json.loads((job_dir / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        job = record.get("job") if isinstance(record, dict) else None
        ref = job.get("ref") if isinstance(job, dict) else None
        return f"ray {ref}" if isinstance(ref, str) else None


RAY = RayKind()
