"""`kind = "ray"`: a job per run submitted to a Ray cluster (KubeRay, Anyscale, `ray up`), its
files on shared storage. The kind opens a `RayMachine` per job; it has no executor.

The registry imports this module in every command: the client, storage (fsspec) and machine
modules (about 100 ms of imports) load only when a job opens a machine."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from overbrainer.config.errors import ConfigError
from overbrainer.config.settings import Settings
from overbrainer.config.target_settings import SettingsKind, TargetSettings
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError, UsageError
from overbrainer.model.json_values import JsonValue
from overbrainer.targets.executor import Executor, JobError, JobRef
from overbrainer.targets.kind import JobChecks, refuse_keep
from overbrainer.targets.ray.settings import (
    RAY_SETTINGS,
    SEEN_FILE,
    RayTarget,
    narrow,
    problems,
)

if TYPE_CHECKING:
    from overbrainer.targets.machine import JobNeeds, JobOpening, Machine, RecordedJob


def refuse_problems(name: str, target: RayTarget) -> None:
    """ConfigError (exit 2) with the table's first problem, if it has one."""
    found = problems(name, target)
    if found:
        raise ConfigError(found[0])


log = logging.getLogger(__name__)


@attrs.frozen
class RayKind:
    """A Ray cluster reached through its Jobs API; each job is one submission."""

    name: str = RayTarget.kind
    settings: SettingsKind = RAY_SETTINGS
    makes_pod: bool = False

    def check(
        self, name: str, target: TargetSettings, needs: JobNeeds, settings: Settings | None = None
    ) -> None:
        """Refuse a table that cannot work and `--keep-pod`, before anything connects (exit 2)."""
        refuse_keep(needs)
        refuse_problems(name, narrow(target))

    def checks(self, target: TargetSettings) -> JobChecks:
        """Nothing to look for first: the cluster's environment is the cluster's (a job that
        finds no `axolotl` there fails with Ray's words in its log)."""
        return JobChecks()

    def left_job(self, target: TargetSettings, job_dir: Path, run_id: str) -> JobRef | None:
        """None: only the cluster knows whether a submission went through."""
        return None

    def alive(self, job_dir: Path, job: JobRef) -> bool | None:
        """None: only the cluster can say (its record says what was last seen)."""
        return None

    async def quote(self, settings: Settings, target: TargetSettings, model: Path) -> str | None:
        """None: a cluster's price is not ours to know."""
        return None

    def connect(
        self,
        name: str,
        target: TargetSettings,
        runs_root: Path,
        interrupt: Interrupt,
        interrupted: Callable[[], OverbrainerError],
    ) -> contextlib.AbstractAsyncContextManager[Executor]:
        """None: a Ray target runs jobs through its machine (`open`)."""
        raise UsageError(f"target `{name}` (kind ray) runs jobs only through the job lifecycle")

    @contextlib.asynccontextmanager
    async def open(self, opening: JobOpening) -> AsyncIterator[Machine]:
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
            # Bounded by request_secs; said first, so a slow head is never a silent wait.
            log.info("ray: reaching the cluster of target `%s`", opening.target_name)
            reached = await opening.interrupt.race(api.version)
            if reached is None:
                raise opening.interrupted()
            job_id = await opening.create(
                opening.needs.nested_in or storage.root, storage_claim(storage)
            )
            local = (opening.job_dirs or opening.local_root) / job_id
            yield RayMachine(target, api, storage, local=local)

    @contextlib.asynccontextmanager
    async def reach(self, recorded: RecordedJob) -> AsyncIterator[Machine]:
        """The cluster of a recorded job; JobError when the cluster no longer knows the job."""
        from overbrainer.targets.ray.connect import open_cluster
        from overbrainer.targets.ray.errors import RayJobMissing
        from overbrainer.targets.ray.machine import RayMachine
        from overbrainer.targets.ray.storage import Storage

        target = narrow(recorded.target)
        storage = Storage(target.storage)
        async with open_cluster(recorded.target_name, target) as api:
            machine = RayMachine(target, api, storage, recorded.job, recorded.job_dir)
            try:
                await api.status(recorded.job.ref or "")
            except RayJobMissing as error:
                raise JobError(
                    f"{error.message}: it was deleted, or the cluster restarted"
                ) from None
            yield machine

    def describe(self, job_dir: Path) -> str | None:
        """`ray RUNNING <submission id> (seen <time>)`: the cluster's state of the job as its
        follower last saw it; `ray <submission id>` from the record before any was seen."""
        try:
            seen = json.loads((job_dir / SEEN_FILE).read_text(encoding="utf-8"))
            return f"ray {seen['state']} {seen['submission_id']} (seen {seen['seen']})"
        except (OSError, ValueError, KeyError, TypeError):
            pass
        try:
            record = json.loads((job_dir / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        job = record.get("job") if isinstance(record, dict) else None
        ref = job.get("ref") if isinstance(job, dict) else None
        return f"ray {ref}" if isinstance(ref, str) else None

    def details(self, job_dir: Path) -> dict[str, JsonValue] | None:
        """`{"state", "submission_id", "seen"}` as the follower last saw the job (`seen` is
        RFC 3339 UTC); None before any was seen."""
        try:
            seen = json.loads((job_dir / SEEN_FILE).read_text(encoding="utf-8"))
            return {key: str(seen[key]) for key in ("state", "submission_id", "seen")}
        except (OSError, ValueError, KeyError, TypeError):
            return None


RAY = RayKind()
