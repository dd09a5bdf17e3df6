"""A target over the system OpenSSH client: one ControlMaster, every operation multiplexed on it.

The master (`ssh -N -M`) is a child process owned by a task of the executor's nursery; each
operation is a short `ssh -o ControlMaster=no` through its socket running a POSIX sh script
(`remote_scripts`). A master that died (network loss, killed) is started again by the next
operation. Host keys are checked strictly: the host must already be in `known_hosts` (the
user's own, or the one an `OVERBRAINER_SSH_CONFIG` file names).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

import trio

from overbrainer.model.error_groups import unwrapped
from overbrainer.model.job_status import JobStatus
from overbrainer.targets import remote_scripts as scripts
from overbrainer.targets.executor import (
    READ_LIMIT,
    JobError,
    JobRef,
    TargetUnreachable,
    TransferError,
)
from overbrainer.targets.job_script import CANCEL_GRACE_S, cancel_script, parse_status, quote
from overbrainer.targets.job_script import status_script as job_status_script
from overbrainer.targets.manifest import manifest_script, parse_manifest

log = logging.getLogger(__name__)

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


class SshExecutor:
    """Target `name` at `host` (user@host or an alias), run directories under `workdir`."""

    def __init__(
        self,
        nursery: trio.Nursery,
        name: str,
        host: str,
        workdir: str,
        *,
        ssh_config: str | None = None,
        control_dir: Path,
    ) -> None:
        self._nursery = nursery
        self.name = name
        self.host = host
        self._workdir_setting = workdir
        self._workdir: str | None = None
        self._home = ""
        self._config = ssh_config
        self._socket = control_dir / "m"
        self._control_dir = control_dir
        self._master: trio.Process | None = None
        self._lock = trio.Lock()
        self._lost = False

    # -- the connection -------------------------------------------------------------------

    def _options(self) -> list[str]:
        config = ["-F", self._config] if self._config else []
        return [
            *config,
            "-o",
            f"ControlPath={self._socket}",
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            f"ConnectTimeout={CONNECT_TIMEOUT_S}",
            "-o",
            f"ServerAliveInterval={ALIVE_INTERVAL_S}",
        ]

    def command(self, script: str) -> list[str]:
        """The `ssh` line that runs `script` with `sh` on the target through the master."""
        return [
            "ssh",
            *self._options(),
            "-o",
            "ControlMaster=no",
            "-T",
            "--",
            self.host,
            f"sh -c {quote(script)}",
        ]

    def fresh_command(self, script: str) -> list[str]:
        """The same without the master: a new connection (for comparison in the benchmark)."""
        config = ["-F", self._config] if self._config else []
        return [
            "ssh",
            *config,
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "ControlMaster=no",
            "-o",
            "ControlPath=none",
            "-T",
            "--",
            self.host,
            f"sh -c {quote(script)}",
        ]

    @property
    def master(self) -> trio.Process | None:
        """The master process (tests kill it to drop the connection)."""
        return self._master

    async def connect(self) -> None:
        """Start the master, wait until it is ready, and resolve the workdir (§4.2)."""
        await self._ensure_master()
        if self._workdir is None:
            out = await self._checked(scripts.workdir_script(self._workdir_setting))
            lines = out.decode("utf-8", "replace").splitlines()
            if len(lines) != 2 or not lines[1].startswith("/"):
                raise TargetUnreachable(f"target `{self.name}` gave no workdir")
            self._home, self._workdir = lines

    async def _ensure_master(self) -> None:
        async with self._lock:
            if self._master is not None and self._master.returncode is None:
                return
            if self._master is not None and not self._lost:
                self._lost = True
                log.warning(
                    "ssh: the connection to target `%s` was lost (its job keeps running): "
                    "reconnecting",
                    self.name,
                )
            with contextlib.suppress(FileNotFoundError):
                self._socket.unlink()
            errors = self._control_dir / "master.err"
            err = await trio.to_thread.run_sync(functools.partial(open, errors, "wb"))
            with err:
                master: trio.Process = await self._nursery.start(
                    functools.partial(
                        trio.run_process,
                        [
                            "ssh",
                            *self._options(),
                            "-N",
                            "-M",
                            "-o",
                            "ControlPersist=no",
                            "--",
                            self.host,
                        ],
                        check=False,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=err,
                        start_new_session=True,
                    )
                )
            self._master = master
            with trio.move_on_after(CONNECT_TIMEOUT_S + 5):
                while master.returncode is None:
                    if await self._master_ready():
                        self._lost = False
                        return
                    await trio.sleep(0.05)
            if master.returncode is None:
                master.kill()
            raw = await trio.to_thread.run_sync(errors.read_bytes)
            why = stderr_text(raw) or "no answer"
            raise TargetUnreachable(f"cannot reach target `{self.name}`: {why}")

    async def _master_ready(self) -> bool:
        if not self._socket.exists():
            return False
        done = await trio.run_process(
            ["ssh", *self._options(), "-O", "check", "--", self.host],
            check=False,
            capture_stdout=True,
            capture_stderr=True,
            start_new_session=True,
        )
        return done.returncode == 0

    async def close(self) -> None:
        """Stop the master (its task ends with it)."""
        if self._master is not None and self._master.returncode is None:
            self._master.terminate()

    # -- running scripts ------------------------------------------------------------------

    async def run(
        self, script: str, *, stdin: bytes = b"", limit: float = OPERATION_TIMEOUT_S
    ) -> subprocess.CompletedProcess[bytes]:
        """Run `script` on the target; TargetUnreachable when ssh itself fails or times out."""
        await self._ensure_master()
        done: subprocess.CompletedProcess[bytes] | None = None
        with trio.move_on_after(limit):
            done = await trio.run_process(
                self.command(script),
                stdin=stdin,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                start_new_session=True,
            )
        if done is None:
            raise TargetUnreachable(f"target `{self.name}` did not answer within {limit:.0f} s")
        if done.returncode == 255:
            why = stderr_text(done.stderr) or "the connection failed"
            raise TargetUnreachable(f"cannot reach target `{self.name}`: {why}")
        return done

    async def _checked(self, script: str, *, stdin: bytes = b"") -> bytes:
        done = await self.run(script, stdin=stdin)
        if done.returncode != 0:
            why = stderr_text(done.stderr) or f"exit status {done.returncode}"
            raise JobError(f"target `{self.name}`: {why}")
        return done.stdout

    # -- the executor operations ----------------------------------------------------------

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
        out = await self._checked(job_status_script(job.dir, job.pid))
        return parse_status(out.decode("utf-8", "replace"))

    async def cancel(self, job: JobRef) -> None:
        """The §4.4 script; JobError with its message when the group outlives SIGKILL."""
        done = await self.run(
            cancel_script(job.dir, job.pid, job.container), limit=CANCEL_TIMEOUT_S
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

    async def upload(self, local: Path, remote: str, skip: Sequence[str] = ()) -> None:
        """`tar -c` of `local` piped into `tar -x` in `remote` on the target."""
        excludes = [f"--exclude=./{name}" for name in skip]
        pack = ["tar", "-C", str(local), "-cf", "-", *excludes, "--", "."]
        await self._pipe(pack, self.command(scripts.upload_script(remote)), "upload", remote)

    async def download(
        self, remote: str, local: Path, entries: Sequence[str], exclude: Sequence[str] = ()
    ) -> None:
        """The target's `tar -c` of the existing `entries` piped into `tar -x` in `local`."""
        await trio.to_thread.run_sync(functools.partial(local.mkdir, parents=True, exist_ok=True))
        send = self.command(scripts.download_script(remote, entries, exclude))
        await self._pipe(send, ["tar", "-C", str(local), "-xf", "-"], "download", remote)

    async def _pipe(self, writer: list[str], reader: list[str], what: str, remote: str) -> None:
        """Run `writer | reader` over a kernel pipe; TransferError when either fails."""
        await self._ensure_master()
        env = {**os.environ, "COPYFILE_DISABLE": "1"}
        errors = [self._control_dir / f"{what}.{side}.err" for side in ("w", "r")]
        read_end, write_end = os.pipe()
        processes: list[trio.Process] = []
        try:
            for argv, stdin, stdout, err_path in (
                (writer, subprocess.DEVNULL, write_end, errors[0]),
                (reader, read_end, subprocess.DEVNULL, errors[1]),
            ):
                err = await trio.to_thread.run_sync(functools.partial(open, err_path, "wb"))
                with err:
                    processes.append(
                        await trio.lowlevel.open_process(
                            argv,
                            stdin=stdin,
                            stdout=stdout,
                            stderr=err,
                            start_new_session=True,
                            env=env,
                        )
                    )
        except BaseException:
            for process in processes:
                process.kill()
            raise
        finally:
            os.close(read_end)
            os.close(write_end)
        try:
            with trio.move_on_after(TRANSFER_TIMEOUT_S):
                for process in processes:
                    await process.wait()
        finally:
            with trio.move_on_after(5, shield=True):
                for process in processes:
                    if process.returncode is None:
                        process.kill()
                    await process.wait()
        for process, err_path, argv in zip(processes, errors, (writer, reader), strict=True):
            raw = await trio.to_thread.run_sync(err_path.read_bytes)
            if process.returncode is None:
                raise TransferError(f"the {what} of {remote} did not finish in time")
            if process.returncode == 255 and argv[0] == "ssh":
                raise TargetUnreachable(f"cannot reach target `{self.name}`: {stderr_text(raw)}")
            if process.returncode != 0:
                why = stderr_text(raw) or f"exit status {process.returncode}"
                raise TransferError(f"the {what} of {remote} failed: {why}")


@contextlib.asynccontextmanager
async def open_ssh(
    name: str, host: str, workdir: str, *, ssh_config: str | None = None
) -> AsyncIterator[SshExecutor]:
    """An SSH executor whose master lives as long as this block (not connected yet)."""
    if shutil.which("ssh") is None:
        raise TargetUnreachable("ssh is not on PATH: install the OpenSSH client")
    control_dir = Path(tempfile.mkdtemp(prefix="ob-ssh-"))
    try:
        async with unwrapped(), trio.open_nursery() as nursery:
            executor = SshExecutor(
                nursery, name, host, workdir, ssh_config=ssh_config, control_dir=control_dir
            )
            try:
                yield executor
            finally:
                await executor.close()
                nursery.cancel_scope.cancel()
    finally:
        shutil.rmtree(control_dir, ignore_errors=True)
