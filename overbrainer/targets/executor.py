"""The operations every target offers (§4.1), and a started job seen through them."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

import attrs
import trio

from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.model.job_status import JobStatus
from overbrainer.targets.job_script import Engine, remove_script

log = logging.getLogger(__name__)

READ_LIMIT = 1 << 20
"""Bytes a tail reads per poll."""
REMOVE_BOUND = 30.0
"""Seconds the removal of a job's container may take (a probe is bounded at 20 s)."""


class TargetUnreachable(OSError):
    """The target could not be reached for one operation (a retry may succeed)."""


class JobError(WorkFailed):
    """A job could not be started, read or cancelled; the message says why."""


class JobGone(JobError):
    """A recorded job's machine no longer exists (a deleted pod): the job failed."""


class TransferError(WorkFailed):
    """An upload, download or manifest failed, or the files do not match the target's."""


@attrs.frozen
class JobRef:
    """A started job as its machine identifies it: its run directory there, its process group
    and container (a process this machine runs), or a scheduler's ID (a cluster's job)."""

    dir: str
    pid: int | None
    container: tuple[Engine, str] | None = None
    ref: str | None = None

    @property
    def group(self) -> int:
        """The job's process group; JobError for a job a scheduler runs (it has none)."""
        if self.pid is None:
            raise JobError(f"the job in {self.dir} is not a process of this machine")
        return self.pid

    def path(self, name: str) -> str:
        """Run file `name` on the target."""
        return f"{self.dir.rstrip('/')}/{name}"


class Executor(Protocol):
    """Where jobs run: a directory for runs, files in it, and detached jobs (§4.1)."""

    @property
    def workdir(self) -> str:
        """The absolute directory on the target that holds run directories."""
        ...

    @property
    def home(self) -> str:
        """The target user's home directory (`~/` in a venv path expands to it)."""
        ...

    @property
    def local(self) -> bool:
        """Whether the target's run directories are the project's own (nothing to transfer)."""
        ...

    async def claim(self, directory: str, owner: str) -> bool:
        """Create `directory/.claim` holding `owner`; False when another owner holds it."""
        ...

    async def upload(self, local: Path, remote: str, skip: Sequence[str] = ()) -> None:
        """Copy the tree `local` into `remote` (names in `skip` left out)."""
        ...

    async def spawn(self, directory: str, commands: str, secrets: Mapping[str, str]) -> JobRef:
        """Start `commands` detached in `directory`, secrets in its environment only."""
        ...

    async def read_from(self, path: str, offset: int, limit: int = READ_LIMIT) -> bytes:
        """Up to `limit` bytes of `path` from `offset`; a missing file reads as empty."""
        ...

    async def exists(self, path: str) -> bool:
        """Whether `path` exists on the target."""
        ...

    async def status(self, job: JobRef) -> JobStatus:
        """The job's status now (§4.3)."""
        ...

    async def cancel(self, job: JobRef) -> None:
        """TERM the job's group, KILL it after 10 s, mark it cancelled (§4.4)."""
        ...

    async def manifest(
        self, remote: str, entries: Sequence[str], exclude: Sequence[str] = ()
    ) -> dict[str, str]:
        """SHA-256 of every regular file under the existing `entries` of `remote` (§4.5)."""
        ...

    async def download(
        self, remote: str, local: Path, entries: Sequence[str], exclude: Sequence[str] = ()
    ) -> None:
        """Copy the existing `entries` of `remote` into `local`."""
        ...

    async def probe(self, script: str) -> str:
        """What `script` prints when run by `sh` on the target."""
        ...

    async def put_file(self, path: str, content: str) -> None:
        """Write `content` to `path` on the target, atomically."""
        ...


@attrs.frozen
class ExecutorJob:
    """A job as the follow loop sees it: its run files, status and cancel, through its target."""

    executor: Executor
    job: JobRef

    async def read_from(self, name: str, offset: int, limit: int) -> bytes:
        """Bytes of run file `name` from `offset`; empty when it does not exist."""
        return await self.executor.read_from(self.job.path(name), offset, limit)

    async def status(self) -> JobStatus:
        """The job's status now."""
        return await self.executor.status(self.job)

    async def exists(self, name: str) -> bool:
        """Whether run file `name` exists."""
        return await self.executor.exists(self.job.path(name))

    async def cancel(self) -> None:
        """TERM the group, KILL it after 10 s, mark it cancelled."""
        await self.executor.cancel(self.job)


async def remove_container(executor: Executor, job: JobRef) -> None:
    """Force-remove the job's container, if it has one: what `--rm` leaves when the engine's
    client was killed before its container ended. Bounded and shielded; a failure is a warning
    that names the command to run."""
    if job.container is None:
        return
    engine, name = job.container
    problem = "it was not removed in time"
    with trio.move_on_after(REMOVE_BOUND, shield=True):
        try:
            await executor.probe(remove_script(job.container))
            return
        except (OSError, OverbrainerError, trio.TooSlowError) as error:
            problem = str(error) or type(error).__name__
    log.warning(
        "cannot remove container %s (%s): remove it with `%s rm -f %s`",
        name,
        problem,
        engine.value,
        name,
    )
