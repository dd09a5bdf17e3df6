"""What an SSH client gives a target (one protocol), and the operations both clients share.

Two clients implement `SshExecutor`: the system OpenSSH client (`ssh.py`) and the builtin one
in this process (`ssh_builtin/`). Each supplies only the transport (connect, run a script with
stdin and captured output, stream a tar in or out, forward a port); every executor operation
is the same POSIX `sh` script over either (`ScriptExecutor`).
"""

from __future__ import annotations

import abc
import subprocess
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Protocol

from overbrainer.model.job_status import JobStatus
from overbrainer.targets import remote_scripts as scripts
from overbrainer.targets.executor import READ_LIMIT as READ_LIMIT
from overbrainer.targets.executor import Executor, JobError, JobRef, TargetUnreachable
from overbrainer.targets.executor import TransferError as TransferError
from overbrainer.targets.job_script import CANCEL_GRACE_S, cancel_script, parse_status
from overbrainer.targets.job_script import status_script as job_status_script
from overbrainer.targets.manifest import manifest_script, parse_manifest

CONNECT_TIMEOUT_S = 30
ALIVE_INTERVAL_S = 15
OPERATION_TIMEOUT_S = 60.0
CANCEL_TIMEOUT_S = 2 * CANCEL_GRACE_S + 40.0
TRANSFER_TIMEOUT_S = 6 * 3600.0
STDERR_LINES = 20
STDERR_BYTES = 4096


def stderr_text(raw: bytes) -> str:
    """The first 20 lines (≤ 4096 bytes) of a command's stderr, and how many more there were."""
    lines = raw[:STDERR_BYTES].decode("utf-8", "replace").splitlines()
    total = len(raw.decode("utf-8", "replace").splitlines())
    kept = [line for line in lines[:STDERR_LINES] if line.strip()]
    more = total - min(len(lines), STDERR_LINES)
    text = "; ".join(kept)
    return f"{text} ({more} more lines)" if more > 0 else text


class SshExecutor(Executor, Protocol):
    """An executor over SSH: connected explicitly, and able to forward a port of the target."""

    async def connect(self) -> None:
        """Connect (if not connected) and learn the target's home and absolute workdir."""
        ...

    def forward(self, port: int, host: str = "127.0.0.1") -> AbstractAsyncContextManager[int]:
        """A local port on 127.0.0.1 whose connections reach `host:port` as the target sees it,
        open for the block."""
        ...


class ScriptExecutor(abc.ABC):
    """The executor operations of §4.1 as `sh` scripts over a client's `run`."""

    def __init__(self, name: str, workdir: str) -> None:
        self.name = name
        self._workdir_setting = workdir
        self._workdir: str | None = None
        self._home = ""

    @abc.abstractmethod
    async def _open(self) -> None:
        """Make sure a connection is up (reconnecting when it was lost)."""

    @abc.abstractmethod
    async def run(
        self, script: str, *, stdin: bytes = b"", limit: float = OPERATION_TIMEOUT_S
    ) -> subprocess.CompletedProcess[bytes]:
        """Run `script` with `sh` on the target; TargetUnreachable when the connection fails."""

    async def connect(self) -> None:
        """Connect, wait until ready, and resolve the workdir (§4.2)."""
        await self._open()
        if self._workdir is None:
            out = await self._checked(scripts.workdir_script(self._workdir_setting))
            lines = out.decode("utf-8", "replace").splitlines()
            if len(lines) != 2 or not lines[1].startswith("/"):
                raise TargetUnreachable(f"target `{self.name}` gave no workdir")
            self._home, self._workdir = lines

    async def _checked(self, script: str, *, stdin: bytes = b"") -> bytes:
        done = await self.run(script, stdin=stdin)
        if done.returncode != 0:
            why = stderr_text(done.stderr) or f"exit status {done.returncode}"
            raise JobError(f"target `{self.name}`: {why}")
        return done.stdout

    @property
    def workdir(self) -> str:
        """The absolute workdir on the target (known once connected)."""
        if self._workdir is None:
            raise RuntimeError("the SSH executor is not connected")
        return self._workdir

    @property
    def home(self) -> str:
        """`$HOME` on the target (known once connected)."""
        return self._home

    @property
    def local(self) -> bool:
        """Never: run directories live on the other machine."""
        return False

    async def claim(self, directory: str, owner: str) -> bool:
        """`directory/.claim` created with noclobber; False when another owner holds it."""
        out = await self._checked(scripts.claim_script(directory, owner))
        return out.strip() == b"claimed"

    async def spawn(self, directory: str, commands: str, secrets: Mapping[str, str]) -> JobRef:
        """The launcher of §4.2: secrets on stdin, the job detached with setsid; its PID."""
        data = scripts.secrets_input(secrets)
        out = await self._checked(scripts.launcher(directory, commands, secrets), stdin=data)
        text = out.decode("utf-8", "replace").strip()
        if not text.isdigit() or int(text) <= 1:
            raise JobError(f"target `{self.name}` started no job (it printed no PID)")
        return JobRef(directory, int(text))

    async def read_from(self, path: str, offset: int, limit: int = READ_LIMIT) -> bytes:
        """Bytes of `path` from `offset` (`tail -c | head -c`); empty when missing."""
        return await self._checked(scripts.read_script(path, offset, limit))

    async def exists(self, path: str) -> bool:
        """Whether `path` exists on the target."""
        return (await self._checked(scripts.exists_script(path))).strip() == b"yes"

    async def status(self, job: JobRef) -> JobStatus:
        """The word the §4.3 script prints."""
        out = await self._checked(job_status_script(job.dir, job.group))
        return parse_status(out.decode("utf-8", "replace"))

    async def cancel(self, job: JobRef) -> None:
        """The §4.4 script; JobError with its message when the group outlives SIGKILL."""
        done = await self.run(
            cancel_script(job.dir, job.group, job.container), limit=CANCEL_TIMEOUT_S
        )
        if done.returncode != 0:
            raise JobError(stderr_text(done.stderr) or f"cannot cancel the job in {job.dir}")

    async def probe(self, script: str) -> str:
        """What `script` prints."""
        done = await self.run(script, limit=20.0)
        return done.stdout.decode("utf-8", "replace")

    async def put_file(self, path: str, content: str) -> None:
        """Write `path` through a temporary file and a rename."""
        await self._checked(scripts.put_script(path), stdin=content.encode())

    async def manifest(
        self, remote: str, entries: Sequence[str], exclude: Sequence[str] = ()
    ) -> dict[str, str]:
        """The target's SHA-256 manifest of the existing `entries` of `remote`."""
        done = await self.run(manifest_script(remote, entries, exclude), limit=TRANSFER_TIMEOUT_S)
        if done.returncode != 0:
            raise TransferError(stderr_text(done.stderr) or f"cannot list {remote}")
        return parse_manifest(done.stdout)

    @abc.abstractmethod
    async def upload(self, local: Path, remote: str, skip: Sequence[str] = ()) -> None:
        """`tar -c` of `local` streamed into `tar -x` in `remote` on the target."""

    @abc.abstractmethod
    async def download(
        self, remote: str, local: Path, entries: Sequence[str], exclude: Sequence[str] = ()
    ) -> None:
        """The target's `tar -c` of the existing `entries` streamed into `tar -x` in `local`."""
