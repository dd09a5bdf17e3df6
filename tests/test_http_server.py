"""The h11 server: keep-alive, bodies, errors, the connection cap and the header timeout."""

from __future__ import annotations

import functools

import httpx2
import pytest
import trio

from overbrainer.net.http_server import Request, Response, serve_http


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
            await trio.sleep(0.1)
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
