"""The local target behind the executor interface: run directories are the project's `runs/`."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs
import trio

from overbrainer.model.job_status import JobStatus
from overbrainer.storage import write_atomic
from overbrainer.targets import local
from overbrainer.targets.claim import claim_dir
from overbrainer.targets.executor import READ_LIMIT, JobRef
from overbrainer.targets.manifest import local_manifest

PROBE_BOUND = 20.0


@attrs.frozen
class LocalExecutor:
    """This machine: R is L, so uploads and downloads have nothing to move."""

    root: Path
    children: local.Children = attrs.field(factory=local.Children, eq=False, repr=False)
    """The jobs this executor started, reaped as their status is read."""

    @property
    def workdir(self) -> str:
        """The project's `runs/`, absolute."""
        return str(self.root.resolve())

    @property
    def home(self) -> str:
        """This user's home directory."""
        return os.path.expanduser("~")

    @property
    def local(self) -> bool:
        """Always: the run directory is the project's own."""
        return True

    async def claim(self, directory: str, owner: str) -> bool:
        """`.claim` created with O_EXCL in `directory`."""
        return await trio.to_thread.run_sync(claim_dir, Path(directory), owner)

    async def upload(self, local_dir: Path, remote: str, skip: Sequence[str] = ()) -> None:
        """Nothing to copy: the run directory is already here."""

    async def spawn(self, directory: str, commands: str, secrets: Mapping[str, str]) -> JobRef:
        """`sh -c <wrapped>` detached in its own process group, secrets in its environment."""
        job = await local.start_job(Path(directory), commands, secrets, self.children)
        return JobRef(directory, job.pid)

    async def read_from(self, path: str, offset: int, limit: int = READ_LIMIT) -> bytes:
        """Bytes of `path` from `offset`, off the event loop."""
        return await trio.to_thread.run_sync(local.read_from, Path(path), offset, limit)

    async def exists(self, path: str) -> bool:
        """Whether `path` exists."""
        return await trio.to_thread.run_sync(Path(path).exists)

    async def status(self, job: JobRef) -> JobStatus:
        """The job's status from its group and marker files."""
        return await local.status(local.LocalJob(Path(job.dir), job.group), self.children)

    async def cancel(self, job: JobRef) -> None:
        """TERM, KILL after 10 s, then `cancelled`."""
        local_job = local.LocalJob(Path(job.dir), job.group)
        await local.cancel(local_job, job.container, children=self.children)

    async def manifest(
        self, remote: str, entries: Sequence[str], exclude: Sequence[str] = ()
    ) -> dict[str, str]:
        """The manifest of the run directory itself."""
        return await trio.to_thread.run_sync(local_manifest, Path(remote), entries, exclude)

    async def download(
        self, remote: str, local_dir: Path, entries: Sequence[str], exclude: Sequence[str] = ()
    ) -> None:
        """Nothing to copy: the results are already here."""

    async def probe(self, script: str) -> str:
        """`sh -c script` on this machine (bounded like a remote probe)."""
        with trio.fail_after(PROBE_BOUND):
            done = await trio.run_process(
                ["sh", "-c", script], capture_stdout=True, capture_stderr=True, check=False
            )
        return done.stdout.decode("utf-8", "replace")

    async def put_file(self, path: str, content: str) -> None:
        """Write `path` atomically."""
        await trio.to_thread.run_sync(write_atomic, Path(path), content)
