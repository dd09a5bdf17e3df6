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
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import trio

from overbrainer.model.error_groups import unwrapped
from overbrainer.targets import remote_scripts as scripts
from overbrainer.targets.executor import TargetUnreachable, TransferError
from overbrainer.targets.job_script import quote
from overbrainer.targets.ssh_failure import changed_host_key, explain
from overbrainer.targets.ssh_session import (
    ALIVE_INTERVAL_S,
    CONNECT_TIMEOUT_S,
    OPERATION_TIMEOUT_S,
    TRANSFER_TIMEOUT_S,
    ScriptExecutor,
    stderr_text,
)

log = logging.getLogger(__name__)


class OpenSshExecutor(ScriptExecutor):
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
        super().__init__(name, workdir)
        self._nursery = nursery
        self.host = host
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

    async def _open(self) -> None:
        """Start the master (again, when it died) and wait until it is ready."""
        await self._ensure_master()

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
                        deliver_cancel=_stop_master,
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
            why = await explain(raw, self.host, self._config)
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
            why = changed_host_key(done.stderr.decode("utf-8", "replace"))
            why = why or stderr_text(done.stderr) or "the connection failed"
            raise TargetUnreachable(f"cannot reach target `{self.name}`: {why}")
        return done

    @contextlib.asynccontextmanager
    async def forward(self, port: int, host: str = "127.0.0.1") -> AsyncIterator[int]:
        """`ssh -O forward -L` through the master for the block, `-O cancel` after it."""
        await self._ensure_master()
        probe = trio.socket.socket()
        with probe:
            await probe.bind(("127.0.0.1", 0))
            local: int = probe.getsockname()[1]
        spec = ["-L", f"127.0.0.1:{local}:{host}:{port}"]
        done = await self._control("forward", spec)
        if done.returncode != 0:
            why = stderr_text(done.stderr) or f"exit status {done.returncode}"
            raise TargetUnreachable(f"cannot forward port {port} of target `{self.name}`: {why}")
        try:
            yield local
        finally:
            with trio.move_on_after(5, shield=True):
                await self._control("cancel", spec)

    async def _control(self, command: str, spec: list[str]) -> subprocess.CompletedProcess[bytes]:
        return await trio.run_process(
            ["ssh", *self._options(), "-O", command, *spec, "--", self.host],
            check=False,
            stdin=subprocess.DEVNULL,
            capture_stdout=True,
            capture_stderr=True,
            start_new_session=True,
        )

    # -- the executor operations ----------------------------------------------------------

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
async def open_openssh(
    name: str, host: str, workdir: str, *, ssh_config: str | None = None
) -> AsyncIterator[OpenSshExecutor]:
    """An SSH executor whose master lives as long as this block (not connected yet)."""
    if shutil.which("ssh") is None:
        raise TargetUnreachable("ssh is not on PATH: install the OpenSSH client")
    control_dir = Path(tempfile.mkdtemp(prefix="ob-ssh-"))
    try:
        async with unwrapped(), trio.open_nursery() as nursery:
            executor = OpenSshExecutor(
                nursery, name, host, workdir, ssh_config=ssh_config, control_dir=control_dir
            )
            try:
                yield executor
            finally:
                await executor.close()
                nursery.cancel_scope.cancel()
    finally:
        shutil.rmtree(control_dir, ignore_errors=True)


MASTER_STOP_S = 1.0
"""Seconds the ControlMaster gets to end on SIGTERM before SIGKILL. It holds nothing that a
kill loses (the job runs detached on the target), and on a loaded machine it has taken over
the 5 s that Trio's default waits (and warns about)."""


async def _stop_master(master: trio.Process) -> None:
    """How a cancelled ControlMaster is stopped: SIGTERM, then SIGKILL; `run_process` ends
    this as soon as the process has exited."""
    master.terminate()
    await trio.sleep(MASTER_STOP_S)
    master.kill()
