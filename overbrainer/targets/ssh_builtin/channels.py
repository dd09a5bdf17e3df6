"""paramiko channels driven from Trio: every blocking call in a worker thread that a
cancellation abandons, and the channel closed (bounded) so the abandoned thread wakes and ends.

Closing a paramiko channel wakes whatever waits on it (`recv`, `sendall`, the exit status), so
a cancelled operation never leaves a thread blocked: it returns as soon as the close is done.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import attrs
import paramiko
import trio

from overbrainer.model.error_groups import unwrapped
from overbrainer.targets.ssh_session import CONNECT_TIMEOUT_S

T = TypeVar("T")
CHUNK = 1 << 18
CLOSE_BOUND_S = 5.0
"""Seconds a shielded close may take (a close waits for the transport's send lock)."""
NO_STATUS = 255
"""The exit status of a command whose channel closed without one (it was killed by a signal)."""


async def blocking(limiter: trio.CapacityLimiter, call: Callable[[], T]) -> T:
    """`call()` in a worker thread; a cancellation returns at once and abandons the thread."""
    return await trio.to_thread.run_sync(call, abandon_on_cancel=True, limiter=limiter)


async def close_bounded(limiter: trio.CapacityLimiter, thing: paramiko.Channel) -> None:
    """Close `thing`, shielded, for at most CLOSE_BOUND_S."""
    with trio.move_on_after(CLOSE_BOUND_S, shield=True):
        await blocking(limiter, thing.close)


@attrs.frozen
class Done:
    """What a remote command left: its exit status, stdout (unless streamed) and stderr."""

    status: int
    stdout: bytes
    stderr: bytes


async def open_session(
    limiter: trio.CapacityLimiter, transport: paramiko.Transport
) -> paramiko.Channel:
    """A new session channel on `transport`."""
    return await blocking(
        limiter, functools.partial(transport.open_session, timeout=CONNECT_TIMEOUT_S)
    )


async def _feed(
    limiter: trio.CapacityLimiter,
    channel: paramiko.Channel,
    source: bytes | trio.abc.ReceiveStream,
) -> None:
    """Send `source` as the command's stdin, then its end (EOF)."""
    try:
        if isinstance(source, bytes):
            if source:
                await blocking(limiter, functools.partial(channel.sendall, source))
        else:
            while data := await source.receive_some(CHUNK):
                await blocking(limiter, functools.partial(channel.sendall, data))
        await blocking(limiter, channel.shutdown_write)
    except OSError:
        # The command ended without reading all of it: its exit status says how it went.
        return


async def _drain(
    limiter: trio.CapacityLimiter,
    receive: Callable[[int], bytes],
    into: bytearray,
    sink: trio.abc.SendStream | None = None,
) -> None:
    """Read one output of the command to its end, into `sink` when given, else `into`."""
    while data := await blocking(limiter, functools.partial(receive, CHUNK)):
        if sink is None:
            into += data
        else:
            await sink.send_all(data)
    if sink is not None:
        await sink.aclose()


async def execute(
    limiter: trio.CapacityLimiter,
    transport: paramiko.Transport,
    command: str,
    stdin: bytes | trio.abc.ReceiveStream = b"",
    stdout: trio.abc.SendStream | None = None,
) -> Done:
    """Run `command` on a new channel: stdin fed, stdout and stderr read at once (so neither
    can fill the window while the other waits), then the exit status."""
    channel = await open_session(limiter, transport)
    try:
        await blocking(limiter, functools.partial(channel.exec_command, command))
        out = bytearray()
        err = bytearray()
        async with unwrapped(), trio.open_nursery() as nursery:
            nursery.start_soon(_feed, limiter, channel, stdin)
            nursery.start_soon(_drain, limiter, channel.recv, out, stdout)
            nursery.start_soon(_drain, limiter, channel.recv_stderr, err)
        status = await blocking(limiter, channel.recv_exit_status)
    finally:
        await close_bounded(limiter, channel)
    return Done(NO_STATUS if status < 0 else status, bytes(out), bytes(err))


async def tunnel(
    limiter: trio.CapacityLimiter,
    transport: paramiko.Transport,
    stream: trio.SocketStream,
    host: str,
    port: int,
) -> None:
    """Carry one local connection to `host:port` as the target sees it, both ways, until
    both sides have ended."""
    peer = stream.socket.getpeername()
    opener = functools.partial(
        transport.open_channel,
        "direct-tcpip",
        (host, port),
        (str(peer[0]), int(peer[1])),
        timeout=CONNECT_TIMEOUT_S,
    )
    channel = await blocking(limiter, opener)
    try:

        async def up() -> None:
            await _feed(limiter, channel, stream)

        async def down() -> None:
            while data := await blocking(limiter, functools.partial(channel.recv, CHUNK)):
                await stream.send_all(data)
            await stream.send_eof()

        async with unwrapped(), trio.open_nursery() as nursery:
            nursery.start_soon(up)
            nursery.start_soon(down)
    finally:
        await close_bounded(limiter, channel)
