"""A small HTTP/1.1 server on Trio and h11: keep-alive, a connection cap and a header timeout.

It serves the metrics endpoint and the stub provider. h11 parses and frames the protocol; this
module only moves bytes between the socket and h11 and calls one handler per request.
"""

from __future__ import annotations

import contextlib
import errno
import http
import logging
import socket
import struct
from collections.abc import Awaitable, Callable

import attrs
import h11
import trio

log = logging.getLogger(__name__)

RECEIVE_SIZE = 65536
ACCEPT_PAUSE = 0.1
"""Seconds to wait after `accept` fails for lack of capacity before trying again."""
ACCEPT_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
"""`accept` errors that pass once connections close (as `trio.serve_listeners` treats them)."""
MAX_BODY = 64 * 1024 * 1024
"""The largest request body accepted; a larger one gets 413 and the connection closes."""


@attrs.frozen
class Request:
    """One request: method, target, lower-case header names, the whole body."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes = b""

    @property
    def path(self) -> str:
        """The target without its query string."""
        return self.target.partition("?")[0]

    @property
    def query(self) -> str:
        """The query string, without `?` (empty when there is none)."""
        return self.target.partition("?")[2]


@attrs.frozen
class Response:
    """A response to send; `drop` closes the connection without answering at all.

    Faults for tests: `cut` sends the head and half the body, then closes; `reset` answers
    nothing and resets the connection (TCP RST).
    """

    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    drop: bool = False
    cut: bool = False
    reset: bool = False


Handler = Callable[[Request], Awaitable[Response]]


class _Closed(Exception):
    """The peer closed the connection between requests."""


class _TooLarge(Exception):
    """The request body is over `MAX_BODY`."""


async def _next_event(stream: trio.SocketStream, conn: h11.Connection) -> object:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(await stream.receive_some(RECEIVE_SIZE))


async def _read_request(stream: trio.SocketStream, conn: h11.Connection) -> Request:
    event = await _next_event(stream, conn)
    if isinstance(event, h11.ConnectionClosed):
        raise _Closed()
    if not isinstance(event, h11.Request):
        raise h11.RemoteProtocolError(f"unexpected {type(event).__name__}")
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in event.headers}
    chunks: list[bytes] = []
    size = 0
    while True:
        part = await _next_event(stream, conn)
        if isinstance(part, h11.Data):
            size += len(part.data)
            if size > MAX_BODY:
                raise _TooLarge()
            chunks.append(bytes(part.data))
        elif isinstance(part, h11.EndOfMessage):
            break
        else:
            raise h11.RemoteProtocolError(f"unexpected {type(part).__name__}")
    return Request(
        event.method.decode("ascii"), event.target.decode("latin-1"), headers, b"".join(chunks)
    )


def _reason(status: int) -> bytes:
    try:
        return http.HTTPStatus(status).phrase.encode("ascii")
    except ValueError:
        return b""


async def _send(
    stream: trio.SocketStream, conn: h11.Connection, response: Response, *, head: bool = False
) -> None:
    headers = [("content-length", str(len(response.body))), *response.headers]
    start = h11.Response(
        status_code=response.status, headers=headers, reason=_reason(response.status)
    )
    data = conn.send(start)
    assert data is not None
    out = [data]
    body = response.body[: len(response.body) // 2] if response.cut else response.body
    if body and not head:
        out.append(conn.send(h11.Data(data=body)) or b"")
    if not response.cut:
        out.append(conn.send(h11.EndOfMessage()) or b"")
    await stream.send_all(b"".join(out))


def _reset(stream: trio.SocketStream) -> None:
    """Make closing `stream` reset the connection: linger on, with a zero timeout."""
    stream.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


async def _answer_error(stream: trio.SocketStream, conn: h11.Connection, status: int) -> None:
    if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
        response = Response(status, b"", (("connection", "close"),))
        with contextlib.suppress(
            trio.BrokenResourceError, trio.ClosedResourceError, h11.LocalProtocolError
        ):
            await _send(stream, conn, response)


async def _serve_connection(
    stream: trio.SocketStream, handler: Handler, header_timeout: float
) -> None:
    conn = h11.Connection(h11.SERVER)
    try:
        while True:
            with trio.fail_after(header_timeout):
                request = await _read_request(stream, conn)
            try:
                response = await handler(request)
            except Exception:
                log.exception("the HTTP handler failed on %s %s", request.method, request.path)
                response = Response(500, b"internal error")
            if response.drop:
                return
            if response.reset:
                _reset(stream)
                return
            try:
                await _send(stream, conn, response, head=request.method == "HEAD")
            except h11.LocalProtocolError:
                log.exception("the HTTP handler returned a response h11 cannot send")
                return
            if response.cut:
                return
            if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                return
            conn.start_next_cycle()
    except _Closed:
        pass
    except trio.TooSlowError:
        log.debug("closing a connection that sent no complete request in %ss", header_timeout)
    except _TooLarge:
        await _answer_error(stream, conn, 413)
    except h11.RemoteProtocolError:
        await _answer_error(stream, conn, 400)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        await trio.aclose_forcefully(stream)


@attrs.define
class _Connections:
    """Open connections across every listener of one server."""

    limit: int | None
    active: int = 0


async def _accept_loop(
    listener: trio.SocketListener,
    nursery: trio.Nursery,
    handler: Handler,
    connections: _Connections,
    header_timeout: float,
) -> None:
    async def serve_one(stream: trio.SocketStream) -> None:
        try:
            await _serve_connection(stream, handler, header_timeout)
        finally:
            connections.active -= 1

    paused = False
    async with listener:
        while True:
            try:
                stream = await listener.accept()
            except OSError as error:
                if error.errno not in ACCEPT_CAPACITY_ERRNOS:
                    raise  # a broken listener (EBADF, …) would fail again at once, forever
                # Out of file descriptors or memory: wait for connections to close, go on.
                if not paused:
                    log.warning("cannot accept connections for now: %s; pausing", error)
                paused = True
                await trio.sleep(ACCEPT_PAUSE)
                continue
            paused = False
            if connections.limit is not None and connections.active >= connections.limit:
                await trio.aclose_forcefully(stream)
                continue
            connections.active += 1
            nursery.start_soon(serve_one, stream)


async def serve_http(
    handler: Handler,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    max_connections: int | None = None,
    header_timeout: float = 10.0,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve `handler` on `host:port` until cancelled; reports the bound (host, port) at start.

    A client that takes longer than `header_timeout` to send a whole request (also between
    keep-alive requests) is disconnected. With `max_connections` open connections, a new one
    is closed at once. Binding errors (`OSError`) reach the caller of `nursery.start`; once
    serving, `accept` pauses on the capacity errors and any other one ends the server with it.
    """
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound = listeners[0].socket.getsockname()
    connections = _Connections(max_connections)
    async with trio.open_nursery() as nursery:
        for listener in listeners:
            nursery.start_soon(
                _accept_loop, listener, nursery, handler, connections, header_timeout
            )
        task_status.started((str(bound[0]), int(bound[1])))
