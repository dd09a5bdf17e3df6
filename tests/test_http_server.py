"""The h11 server: keep-alive, bodies, errors, the connection cap and the header timeout."""

from __future__ import annotations

import errno
import functools
import logging
import os

import httpx2
import pytest
import trio
import trio.testing

from overbrainer.model.error_groups import error_leaves
from overbrainer.net.http_server import ACCEPT_PAUSE, Request, Response, serve_http


async def echo(request: Request) -> Response:
    if request.path == "/drop":
        return Response(drop=True)
    if request.path == "/boom":
        raise RuntimeError("handler bug")
    if request.path == "/bad-header":
        return Response(200, b"", (("x-bad", " padded "),))
    text = f"{request.method} {request.path} {request.query} {len(request.body)}"
    return Response(200, text.encode(), (("x-seen", request.headers.get("x-test", "")),))


async def test_serves_requests_over_one_kept_alive_connection() -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            host, port = await nursery.start(serve_http, echo)
            assert host == "127.0.0.1" and port > 0
            async with httpx2.AsyncClient() as client:
                first = await client.post(
                    f"http://{host}:{port}/a?b=1", content=b"x" * 100_000, headers={"x-test": "t"}
                )
                second = await client.get(f"http://{host}:{port}/c")
            assert (first.status_code, first.text) == (200, "POST /a b=1 100000")
            assert first.headers["x-seen"] == "t"
            assert second.text == "GET /c  0"
            assert second.reason_phrase == "OK"
            async with httpx2.AsyncClient() as client:
                head = await client.head(f"http://{host}:{port}/h")
            assert (head.status_code, head.content) == (200, b"")
            assert head.headers["content-length"] == str(len("HEAD /h  0"))
            nursery.cancel_scope.cancel()


async def test_handler_errors_give_500_and_drop_closes_without_answer() -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            host, port = await nursery.start(serve_http, echo)
            async with httpx2.AsyncClient() as client:
                assert (await client.get(f"http://{host}:{port}/boom")).status_code == 500
                with pytest.raises(httpx2.HTTPError):
                    await client.get(f"http://{host}:{port}/bad-header")
                assert (await client.get(f"http://{host}:{port}/ok")).status_code == 200
                with pytest.raises(httpx2.HTTPError):
                    await client.get(f"http://{host}:{port}/drop")
            nursery.cancel_scope.cancel()


async def test_garbage_gets_400() -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            host, port = await nursery.start(serve_http, echo)
            stream = await trio.open_tcp_stream(host, port)
            await stream.send_all(b"NOT HTTP AT ALL\r\n\r\n")
            reply = await stream.receive_some(1000)
            assert reply.startswith(b"HTTP/1.1 400")
            await stream.aclose()
            nursery.cancel_scope.cancel()


async def test_connections_over_the_cap_are_closed_at_once() -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            host, port = await nursery.start(functools.partial(serve_http, echo, max_connections=2))
            held = [await trio.open_tcp_stream(host, port) for _ in range(2)]
            await trio.testing.wait_all_tasks_blocked()  # the server has taken both
            extra = await trio.open_tcp_stream(host, port)
            assert await extra.receive_some(100) == b""  # closed by the server, unanswered
            await held[0].send_all(b"GET /x HTTP/1.1\r\nhost: a\r\n\r\n")
            assert (await held[0].receive_some(1000)).startswith(b"HTTP/1.1 200")
            for stream in [*held, extra]:
                await stream.aclose()
            nursery.cancel_scope.cancel()


async def test_a_slow_client_is_cut_at_the_header_timeout(autojump_clock: trio.abc.Clock) -> None:
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            host, port = await nursery.start(functools.partial(serve_http, echo, header_timeout=10))
            stream = await trio.open_tcp_stream(host, port)
            await stream.send_all(b"GET /x HTTP/1.1\r\n")
            start = trio.current_time()
            assert await stream.receive_some(100) == b""
            assert 10 <= trio.current_time() - start < 11
            await stream.aclose()
            nursery.cancel_scope.cancel()


def failing_accept(monkeypatch: pytest.MonkeyPatch, *errnos: int) -> list[int]:
    """Make `accept` fail with `errnos` in turn, then work; returns the errnos raised so far."""
    real = trio.SocketListener.accept
    raised: list[int] = []

    async def accept(self: trio.SocketListener) -> trio.SocketStream:
        if len(raised) < len(errnos):
            await trio.lowlevel.checkpoint()
            code = errnos[len(raised)]
            raised.append(code)
            raise OSError(code, os.strerror(code))
        return await real(self)

    monkeypatch.setattr(trio.SocketListener, "accept", accept)
    return raised


async def test_accept_pauses_on_capacity_errors_then_serves(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    raised = failing_accept(monkeypatch, errno.EMFILE, errno.ENFILE, errno.ENOBUFS)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            started = trio.current_time()
            host, port = await nursery.start(serve_http, echo)
            async with httpx2.AsyncClient() as client:
                reply = await client.get(f"http://{host}:{port}/after")
            assert reply.text == "GET /after  0"
            assert raised == [errno.EMFILE, errno.ENFILE, errno.ENOBUFS]
            assert trio.current_time() - started >= 3 * ACCEPT_PAUSE
            nursery.cancel_scope.cancel()
    # One warning for the streak, not one per pause.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        "cannot accept connections for now: [Errno 24] Too many open files; pausing"
    ]


async def test_another_accept_error_ends_serving_with_it_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raised = failing_accept(monkeypatch, errno.EBADF, errno.EBADF)
    with trio.fail_after(10):
        with pytest.raises(BaseExceptionGroup) as group:
            async with trio.open_nursery() as nursery:
                await nursery.start(serve_http, echo)
                await trio.sleep_forever()
    [error] = error_leaves(group.value)
    assert isinstance(error, OSError) and error.errno == errno.EBADF
    assert raised == [errno.EBADF]  # no retry, no spin
