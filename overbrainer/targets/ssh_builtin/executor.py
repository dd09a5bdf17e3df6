"""A target over the builtin SSH client (paramiko, in this process): one transport per
executor, every operation a channel on it, started again when it was lost."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import subprocess
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import paramiko
import trio

from overbrainer.model.error_groups import unwrapped
from overbrainer.targets import remote_scripts as scripts
from overbrainer.targets.executor import TargetUnreachable, TransferError
from overbrainer.targets.job_script import quote
from overbrainer.targets.ssh_builtin.channels import (
    CLOSE_BOUND_S,
    Done,
    blocking,
    execute,
    tunnel,
)
from overbrainer.targets.ssh_builtin.destination import Refused, resolve
from overbrainer.targets.ssh_builtin.dial import SSH_ERRORS, Abort, Dialled, dial, ssh_cause
from overbrainer.targets.ssh_session import (
    OPERATION_TIMEOUT_S,
    TRANSFER_TIMEOUT_S,
    ScriptExecutor,
    stderr_text,
)

log = logging.getLogger(__name__)

THREADS = 64
"""Worker threads one executor may block at once (each operation needs up to three)."""


class BuiltinSshExecutor(ScriptExecutor):
    """Target `name` at `host` (user@host or an alias of `ssh_config`), run directories under
    `workdir`, reached through paramiko."""

    def __init__(
        self, nursery: trio.Nursery, name: str, host: str, workdir: str, ssh_config: str | None
    ) -> None:
        super().__init__(name, workdir)
        self._nursery = nursery
        self.host = host
        self._config = ssh_config
        self._limiter = trio.CapacityLimiter(THREADS)
        self._transport: paramiko.Transport | None = None
        self._jumps: tuple[paramiko.Transport, ...] = ()
        self._lock = trio.Lock()
        self._lost = False

    # -- the connection -------------------------------------------------------------------

    @property
    def transport(self) -> paramiko.Transport | None:
        """The connection (tests close its socket to drop it)."""
        return self._transport

    def _unreachable(self, why: str) -> TargetUnreachable:
        return TargetUnreachable(f"cannot reach target `{self.name}`: {why}")

    async def _open(self) -> None:
        """Connect (again, when the connection was lost)."""
        await self._connected()

    async def _connected(self) -> paramiko.Transport:
        async with self._lock:
            if self._transport is not None and self._transport.is_active():
                return self._transport
            if self._transport is not None:
                await self._lose()
            abort = Abort()
            try:
                destination = await trio.to_thread.run_sync(resolve, self.host, self._config)
                dialled = await blocking(self._limiter, functools.partial(dial, destination, abort))
            except Refused as refused:
                raise self._unreachable(str(refused)) from None
            except BaseException:
                with trio.move_on_after(CLOSE_BOUND_S, shield=True):
                    await trio.to_thread.run_sync(abort.abort, abandon_on_cancel=True)
                raise
            self._transport, self._jumps = dialled.transport, dialled.jumps
            self._lost = False
            return dialled.transport

    async def _lose(self) -> None:
        """Drop a connection that broke, saying once that it is being made again."""
        if not self._lost:
            self._lost = True
            log.warning(
                "ssh: the connection to target `%s` was lost (its job keeps running): reconnecting",
                self.name,
            )
        await self._drop()

    async def _drop(self) -> None:
        """Close the connection, then the jump hosts', bounded (its channels end with it)."""
        transport, self._transport = self._transport, None
        jumps, self._jumps = self._jumps, ()
        if transport is not None:
            with trio.move_on_after(CLOSE_BOUND_S, shield=True):
                await blocking(self._limiter, Dialled(transport, jumps).close)

    async def close(self) -> None:
        """End the connection (the target's jobs do not care)."""
        await self._drop()

    async def _execute(
        self,
        script: str,
        limit: float,
        stdin: bytes | trio.abc.ReceiveStream = b"",
        stdout: trio.abc.SendStream | None = None,
    ) -> Done:
        """Run `script` with `sh`; TargetUnreachable when the connection fails or time runs out."""
        transport = await self._connected()
        done: Done | None = None
        with trio.move_on_after(limit):
            try:
                done = await execute(
                    self._limiter, transport, f"sh -c {quote(script)}", stdin, stdout
                )
            except SSH_ERRORS as error:
                await self._lose()
                raise self._unreachable(f"the connection failed: {ssh_cause(error)}") from None
        if done is None:
            await self._drop()  # a connection that stopped answering is not used again
            raise TargetUnreachable(f"target `{self.name}` did not answer within {limit:.0f} s")
        # paramiko closes the channels of a dying transport before it marks the transport
        # inactive, having recorded why it died: a channel closed that way is no answer.
        if not transport.is_active() or transport.saved_exception is not None:
            await self._lose()
            raise self._unreachable("the connection was lost")
        return done

    # -- running scripts ------------------------------------------------------------------

    async def run(
        self, script: str, *, stdin: bytes = b"", limit: float = OPERATION_TIMEOUT_S
    ) -> subprocess.CompletedProcess[bytes]:
        """Run `script` on the target; TargetUnreachable when the connection fails or times out."""
        done = await self._execute(script, limit, stdin)
        return subprocess.CompletedProcess(script, done.status, done.stdout, done.stderr)

    @contextlib.asynccontextmanager
    async def forward(self, port: int, host: str = "127.0.0.1") -> AsyncIterator[int]:
        """A listener on 127.0.0.1 whose connections are carried to `host:port` on the target
        (each on its own channel) for the block."""
        await self._connected()
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        local: int = listeners[0].socket.getsockname()[1]

        async def carry(stream: trio.SocketStream) -> None:
            async with stream:
                try:
                    transport = await self._connected()
                    await tunnel(self._limiter, transport, stream, host, port)
                except (*SSH_ERRORS, trio.BrokenResourceError) as error:
                    log.warning(
                        "ssh: a connection forwarded to %s:%d failed: %s",
                        host,
                        port,
                        ssh_cause(error),
                    )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, carry, listeners)
            try:
                yield local
            finally:
                nursery.cancel_scope.cancel()

    # -- transfers ------------------------------------------------------------------------

    async def upload(self, local: Path, remote: str, skip: Sequence[str] = ()) -> None:
        """`tar -c` of `local` streamed into `tar -x` in `remote` on the target."""
        excludes = [f"--exclude=./{name}" for name in skip]
        pack = ["tar", "-C", str(local), "-cf", "-", *excludes, "--", "."]
        await self._transfer(pack, scripts.upload_script(remote), "upload", remote)

    async def download(
        self, remote: str, local: Path, entries: Sequence[str], exclude: Sequence[str] = ()
    ) -> None:
        """The target's `tar -c` of the existing `entries` streamed into `tar -x` in `local`."""
        await trio.to_thread.run_sync(functools.partial(local.mkdir, parents=True, exist_ok=True))
        script = scripts.download_script(remote, entries, exclude)
        await self._transfer(["tar", "-C", str(local), "-xf", "-"], script, "download", remote)

    async def _transfer(self, argv: list[str], script: str, what: str, remote: str) -> None:
        """The local `tar` (writing for an upload, reading for a download) joined to `script`
        on the target through one channel; TransferError when either side fails."""
        env = {**os.environ, "COPYFILE_DISABLE": "1"}
        sending = what == "upload"
        process = await trio.lowlevel.open_process(
            argv,
            stdin=subprocess.DEVNULL if sending else subprocess.PIPE,
            stdout=subprocess.PIPE if sending else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=env,
        )
        errors = bytearray()
        done: Done | None = None
        try:
            async with unwrapped(), trio.open_nursery() as nursery:
                nursery.start_soon(_collect, process, errors)
                try:
                    if sending:
                        assert process.stdout is not None
                        async with process.stdout:
                            done = await self._execute(
                                script, TRANSFER_TIMEOUT_S, stdin=process.stdout
                            )
                    else:
                        assert process.stdin is not None
                        done = await self._execute(script, TRANSFER_TIMEOUT_S, stdout=process.stdin)
                except trio.BrokenResourceError:
                    pass  # the local tar stopped reading: its status says why
                with trio.move_on_after(OPERATION_TIMEOUT_S):
                    await process.wait()
        finally:
            with trio.move_on_after(5, shield=True):
                if process.returncode is None:
                    process.kill()
                await process.wait()
        code = process.returncode
        assert code is not None  # waited for above
        _check_transfer(what, remote, code, bytes(errors), done)


def _check_transfer(what: str, remote: str, code: int, errors: bytes, done: Done | None) -> None:
    """TransferError naming the side that failed first in the stream's direction (a local tar
    killed by a signal after the target's side failed is not the cause)."""
    local_why = stderr_text(errors) or f"exit status {code}"
    if done is None:  # the local tar stopped reading the stream
        why = local_why if code != 0 else "the local tar stopped reading"
        raise TransferError(f"the {what} of {remote} failed: {why}")
    far = (done.status != 0, stderr_text(done.stderr) or f"exit status {done.status}")
    local = (code != 0 and not (code < 0 and far[0]), local_why)
    for failed, why in [local, far] if what == "upload" else [far, local]:
        if failed:
            raise TransferError(f"the {what} of {remote} failed: {why}")


async def _collect(process: trio.Process, into: bytearray) -> None:
    """The process's stderr, read to its end."""
    assert process.stderr is not None
    async with process.stderr:
        while data := await process.stderr.receive_some(1 << 16):
            into += data


@contextlib.asynccontextmanager
async def open_builtin(
    name: str, host: str, workdir: str, *, ssh_config: str | None = None
) -> AsyncIterator[BuiltinSshExecutor]:
    """A builtin-client executor whose connection lives as long as this block (not connected
    yet)."""
    async with unwrapped(), trio.open_nursery() as nursery:
        executor = BuiltinSshExecutor(nursery, name, host, workdir, ssh_config)
        try:
            yield executor
        finally:
            await executor.close()
            nursery.cancel_scope.cancel()
