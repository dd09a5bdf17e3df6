"""A Ray job as the follow loop reads it: run files from the storage, the status from the Jobs
API, cancel through it. A head that does not answer is an OSError (the follow loop tries again
for `reconnect_secs`), never a failed job."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import trio

from overbrainer.model.job_status import Cancelled, Exited, JobStatus, Lost, Running
from overbrainer.model.utc import rfc3339
from overbrainer.storage import write_atomic
from overbrainer.targets.executor import JobRef
from overbrainer.targets.ray.errors import RayError, RayJobMissing, RayUnanswered
from overbrainer.targets.ray.jobs_api import JobInfo, JobsApi, JobState
from overbrainer.targets.ray.settings import SEEN_FILE
from overbrainer.targets.ray.storage import Storage

log = logging.getLogger(__name__)

STOP_WITHIN = 60.0
"""Seconds a stopped job has to end (Ray sends SIGTERM, then SIGKILL after its grace)."""
STOP_POLL = 0.5


def submission_of(job: JobRef) -> str:
    """The job's submission ID (what the machine said when it started it)."""
    if not job.ref:
        raise RayJobMissing(f"the job in {job.dir} has no Ray submission ID")
    return job.ref


class RayFollowedJob:
    """One submitted job: `job.dir` is R on the storage, `job.ref` its submission ID."""

    def __init__(
        self, api: JobsApi, storage: Storage, job: JobRef, local: Path | None = None
    ) -> None:
        self._api = api
        self._storage = storage
        self._job = job
        self._sid = submission_of(job)
        self._local = local
        self._seen: JobState | None = None

    def _path(self, name: str) -> str:
        return self._storage.path(self._job.path(name))

    async def read_from(self, name: str, offset: int, limit: int) -> bytes:
        """Bytes of run file `name` in R from `offset` (empty when it does not exist)."""
        return await self._storage.read_from(self._path(name), offset, limit)

    async def exists(self, name: str) -> bool:
        """Whether run file `name` exists in R."""
        return await self._storage.exists(self._path(name))

    async def _info(self) -> JobInfo:
        try:
            info = await self._api.status(self._sid)
        except RayUnanswered as error:
            raise OSError(error.message) from None
        if info.state is not self._seen:
            await self._remember(info.state)
        return info

    async def _remember(self, state: JobState) -> None:
        """Keep the cluster's state of the job beside its local record (for `runs ls`)."""
        self._seen = state
        if self._local is None:
            return
        seen = rfc3339()
        text = json.dumps({"submission_id": self._sid, "state": state.value, "seen": seen})
        try:
            await trio.to_thread.run_sync(write_atomic, self._local / SEEN_FILE, text + "\n")
        except OSError as error:
            log.debug("cannot keep the Ray job's state in %s: %s", self._local, error)

    async def status(self) -> JobStatus:
        """Running while Ray runs it; then the job script's exit code from R, `Cancelled` when
        it was stopped, `Lost` when the cluster no longer knows it."""
        try:
            info = await self._info()
        except RayJobMissing:
            return Lost()
        if not info.state.ended:
            return Running()
        if info.state is JobState.STOPPED:
            return Cancelled()
        code = await self.read_from("exit_code", 0, 64)
        if code.strip().isdigit():
            return Exited(int(code))
        # The entrypoint never reached the job (its runtime env failed, R was not writable):
        # Ray's own words go where the user is told to look.
        await self._note(info)
        return Exited(info.exit_code) if info.exit_code is not None else Lost()

    async def _note(self, info: JobInfo) -> None:
        if await self.exists("job.log"):
            return
        try:
            logs = await self._api.logs(self._sid)
        except (RayUnanswered, RayJobMissing):
            logs = ""
        text = f"Ray job {self._sid}: {info.state.value}: {info.message}\n{logs}"
        try:
            await self._storage.write(self._path("job.log"), text.encode())
        except OSError as error:
            log.warning("cannot write the Ray job's log to %s: %s", self._job.dir, error)

    async def cancel(self) -> None:
        """Stop the job through the Jobs API and wait until Ray says it ended."""
        try:
            await self._api.stop(self._sid)
            with trio.fail_after(STOP_WITHIN):
                while True:
                    if (await self._info()).state.ended:
                        return
                    await trio.sleep(STOP_POLL)
        except RayJobMissing:
            return
        except RayUnanswered as error:
            raise OSError(error.message) from None
        except trio.TooSlowError:
            raise RayError(
                f"the Ray job {self._sid} did not stop within {STOP_WITHIN:g}s"
            ) from None
