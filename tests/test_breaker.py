"""The circuit breaker: a provider nobody can reach stops being asked, with its host named."""

from __future__ import annotations

import socket

import pytest
import trio
import trio.testing

from overbrainer.config.settings import Protocol
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.llm.breaker import Breaker
from overbrainer.llm.client import ProviderConnection, open_client
from overbrainer.llm.errors import ProviderUnreachable, TransportError
from overbrainer.llm.http import address_of
from overbrainer.llm.types import CompletionRequest
from tests.ports import free_port

REQUEST = CompletionRequest("q")


async def test_three_refused_connections_open_the_breaker_and_then_nothing_is_tried() -> None:
    port = free_port()
    with trio.fail_after(10):
        connection = ProviderConnection(Protocol.OPENAI, f"http://127.0.0.1:{port}/v1")
        async with open_client(connection, "m", max_retries=5) as client:
            client.http.breaker.provider = "openrouter"
            with pytest.raises(ProviderUnreachable) as caught:
                await client.complete(REQUEST)  # 1 attempt, then 2 retries (backoff 1 s, 2 s)
            assert caught.value.message == (
                f"cannot reach provider `openrouter` at 127.0.0.1:{port}: connection refused"
            )
            assert caught.value.stops_stage and not caught.value.retryable
            # Open: the next request fails at once, even once something listens there.
            with socket.socket() as listener:
                listener.bind(("127.0.0.1", port))
                listener.listen()
                with pytest.raises(ProviderUnreachable):
                    await client.complete_once(REQUEST)


async def test_an_unknown_host_is_named_with_its_default_port() -> None:
    with trio.fail_after(20):
        connection = ProviderConnection(Protocol.OPENAI, "https://no-such-host.invalid/v1")
        async with open_client(connection, "m", max_retries=0) as client:
            with pytest.raises(TransportError) as caught:
                await client.complete(REQUEST)
    assert caught.value.message == (
        "request failed: cannot connect to no-such-host.invalid:443: host not found"
    )


async def test_a_provider_that_answered_is_given_up_only_after_the_outage_lasts(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = Breaker("stub", "127.0.0.1:1")
    breaker.replied()
    assert breaker.failed_to_connect("connection refused") is None
    assert breaker.failed_to_connect("connection refused") is None
    assert breaker.failed_to_connect("connection refused") is None  # 3 in a row, at once
    await trio.sleep(5)
    tripped = breaker.failed_to_connect("connection refused")
    assert tripped is not None and tripped.message == (
        "cannot reach provider `stub` at 127.0.0.1:1: connection refused"
    )


async def test_a_reply_between_failures_resets_the_count(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = Breaker("", "h:80")
    for _ in range(5):
        assert breaker.failed_to_connect("connection refused") is None
        assert breaker.failed_to_connect("connection refused") is None
        breaker.replied()
    breaker.check()
    assert breaker.failed_to_connect("x") is None


async def test_any_reply_counts_as_reaching_the_provider() -> None:
    async with open_stub() as stub:
        connection = ProviderConnection(Protocol.OPENAI, stub.url)
        async with open_client(connection, "m") as client:
            await client.complete(REQUEST)
            assert client.http.breaker.tripped is None


def test_addresses_never_hold_userinfo() -> None:
    assert address_of("https://user:key@openrouter.ai/api/v1") == "openrouter.ai:443"
    assert address_of("http://[::1]:8080/v1") == "[::1]:8080"
    assert address_of("http://localhost/v1") == "localhost:80"
