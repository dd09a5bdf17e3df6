"""What a machine with a shell does the same way whoever made it (a host's executor, a pod's
SSH): the job's files and the job itself, through its executor."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import trio

from overbrainer.targets.executor import Executor, ExecutorJob, JobRef
from overbrainer.targets.job_script import quote
from overbrainer.targets.machine import FollowedJob
from overbrainer.targets.manifest import local_manifest, verify


class ShellMachine:
    """The `Machine` methods that only need an executor (a mixin of the host's and the pod's
    machines; each overrides what differs for it)."""

    executor: Executor

    async def stage(self, local: Path, root: str, skip: Sequence[str] = ()) -> None:
        """Upload the tree `local` to `root`."""
        await self.executor.upload(local, root, skip)

    def followed(self, job: JobRef) -> FollowedJob:
        """The job through the executor."""
        return ExecutorJob(self.executor, job)

    async def request(self, job: JobRef, name: str, content: str) -> None:
        """Write run file `name` of the job, atomically."""
        await self.executor.put_file(job.path(name), content)

    async def exists(self, path: str) -> bool:
        """Whether `path` exists on the machine."""
        return await self.executor.exists(path)

    async def digests(self, root: str, entries: Sequence[str]) -> dict[str, str]:
        """SHA-256 of the files under the existing `entries` of `root`."""
        return await self.executor.manifest(root, entries)

    async def remove(self, root: str, entries: Sequence[str]) -> None:
        """Remove `entries` of `root` (what was staged)."""
        if entries:
            await self.executor.probe(f"cd -- {quote(root)} && rm -rf -- {' '.join(entries)}")

    async def fetch(
        self, job: JobRef, local: Path, entries: Sequence[str], exclude: Sequence[str] = ()
    ) -> None:
        """Manifest, download, then check every file against the machine's SHA-256."""
        expected = await self.executor.manifest(job.dir, entries, exclude)
        await self.executor.download(job.dir, local, entries, exclude)
        found = await trio.to_thread.run_sync(local_manifest, local, entries, exclude)
        verify(expected, found)
