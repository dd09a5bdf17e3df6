"""HTTP errors, retries, timeouts and key hygiene of the client, against the stub over HTTP."""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing

from overbrainer.devtools.stub_provider import StubProvider, open_stub
from overbrainer.devtools.stub_script import Reply
from overbrainer.llm.client import ProtocolClient, ProviderConnection, open_client
from overbrainer.llm.errors import InvalidResponse, LlmError, StatusError, TransportError
from overbrainer.llm.retry import RetryPolicy, retry_message
from overbrainer.llm.types import CompletionRequest, Protocol
from tests.llm_helpers import KEY, client_on
from tests.ports import free_port

REQUEST = CompletionRequest("q")


@pytest.fixture
async def stub() -> AsyncIterator[StubProvider]:
    async with open_stub() as served:
        yield served


class Retries:
    """An `on_retry` callback that keeps what it was told."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str, float]] = []

    def __call__(self, number: int, error: Exception, wait: float) -> None:
        self.calls.append((number, retry_message(error, wait), wait))

    @property
    def waits(self) -> list[float]:
        return [wait for _, _, wait in self.calls]


async def test_retry_after_is_honoured(
    stub: StubProvider, autojump_clock: trio.testing.MockClock
) -> None:
    stub.queue(
        Reply(status=429, content="slow down", headers={"retry-after": "3"}),
        Reply(status=503, content="busy", headers={"retry-after": "0.5"}),
        Reply(content="fine"),
    )
    retries = Retries()
    start = trio.current_time()
    with trio.fail_after(60):
        async with client_on(stub) as client:
            completion = await client.complete(REQUEST, retries)
    assert completion.content == "fine"
    assert len(stub.completions) == 3
    assert retries.calls == [
        (1, "HTTP 429: slow down; retrying in 3.0s", 3.0),
        (2, "HTTP 503: busy; retrying in 0.5s", 0.5),
    ]
    assert trio.current_time() - start == pytest.approx(3.5, abs=0.01)


async def test_litellm_passes_its_retry_after_on_under_another_name(
    stub: StubProvider, autojump_clock: trio.testing.MockClock
) -> None:
    # LiteLLM's proxy forwards the `retry-after: 60` of its own rpm check prefixed.
    stub.queue(
        Reply(status=429, content="rpm", headers={"llm_provider-retry-after": "60"}),
        Reply(content="fine"),
    )
    retries = Retries()
    with trio.fail_after(600):
        async with client_on(stub) as client:
            await client.complete(REQUEST, retries)
    assert retries.waits == [60.0]


async def test_retry_after_is_capped_at_600s_and_dates_are_ignored(
    stub: StubProvider, autojump_clock: trio.testing.MockClock
) -> None:
    stub.queue(
        Reply(status=429, headers={"retry-after": "5000"}),
        Reply(status=429, headers={"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}),
        Reply(status=429, headers={"retry-after": "-4"}),
        Reply(content="fine"),
    )
    retries = Retries()
    with trio.fail_after(2000):
        async with client_on(stub) as client:
            await client.complete(REQUEST, retries)
    assert retries.waits[0] == 600.0
    assert 1.0 <= retries.waits[1] <= 2.0  # backoff of retry 2: 2 s, jittered down to half
    assert 2.0 <= retries.waits[2] <= 4.0


async def test_backoff_doubles_with_jitter_then_gives_up(
    stub: StubProvider, autojump_clock: trio.testing.MockClock
) -> None:
    stub.queue(*[Reply(status=500, content=f"down {i}") for i in range(6)])
    retries = Retries()
    jitters = random.Random(11)
    expected = [min(2.0**k, 60.0) * (0.5 + 0.5 * jitters.random()) for k in range(5)]
    start = trio.current_time()
    with trio.fail_after(600):
        async with open_client(ProviderConnection(Protocol.OPENAI, stub.url, KEY), "m") as base:
            client = ProtocolClient(
                base.http, Protocol.OPENAI, "m", retry=RetryPolicy(5), rng=random.Random(11)
            )
            with pytest.raises(StatusError) as caught:
                await client.complete(REQUEST, retries)
    assert caught.value.message == "HTTP 500: down 5"
    assert len(stub.completions) == 6
    assert [n for n, _, _ in retries.calls] == [1, 2, 3, 4, 5]
    assert retries.waits == pytest.approx(expected)
    assert trio.current_time() - start == pytest.approx(sum(expected), abs=0.01)
    assert retries.calls[0][1] == f"HTTP 500: down 0; retrying in {expected[0]:.1f}s"


def test_backoff_reaches_the_60s_cap() -> None:
    policy = RetryPolicy()
    assert [policy.delay(k, None, 1.0) for k in range(8)] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert policy.delay(3, None, 0.0) == 4.0
    assert policy.delay(3, 12.5, 0.0) == 12.5


@pytest.mark.parametrize(
    ("status", "stops_stage"),
    [(400, False), (401, True), (402, True), (403, True), (404, True), (422, False)],
)
async def test_client_errors_are_not_retried(
    stub: StubProvider, status: int, stops_stage: bool
) -> None:
    stub.queue(Reply(status=status, content="no", headers={"retry-after": "1"}))
    retries = Retries()
    with trio.fail_after(10):
        async with client_on(stub) as client:
            with pytest.raises(StatusError) as caught:
                await client.complete(REQUEST, retries)
    assert caught.value.status == status
    assert caught.value.stops_stage is stops_stage
    assert not caught.value.retryable
    assert len(stub.completions) == 1
    assert retries.calls == []


@pytest.mark.parametrize("status", [408, 429, 500, 502, 529])
async def test_retryable_statuses(
    stub: StubProvider, status: int, autojump_clock: trio.testing.MockClock
) -> None:
    stub.queue(Reply(status=status, content="again"), Reply(content="fine"))
    with trio.fail_after(60):
        async with client_on(stub) as client:
            assert (await client.complete(REQUEST)).content == "fine"
    assert len(stub.completions) == 2


async def test_a_body_that_is_not_json_is_retried_like_a_5xx(
    stub: StubProvider, autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    stub.queue(Reply(body=b"{not json"), Reply(body=b'{"choices": [{"mess'), Reply(content="ok"))
    caplog.set_level(logging.DEBUG, logger="overbrainer.llm.http")
    with trio.fail_after(60):
        async with client_on(stub) as client:
            assert (await client.complete(REQUEST)).content == "ok"
    assert len(stub.completions) == 3
    assert "a 200 body that is not JSON: b'{not json'" in caplog.text


async def test_a_body_that_stays_unreadable_fails_with_the_parse_error(
    stub: StubProvider, autojump_clock: trio.testing.MockClock
) -> None:
    stub.queue(*[Reply(body=b"{not json")] * 3)
    with trio.fail_after(60):
        async with client_on(stub, max_retries=2) as client:
            with pytest.raises(InvalidResponse) as caught:
                await client.complete(REQUEST)
    assert caught.value.message.startswith("invalid response: Expecting property name")
    assert len(stub.completions) == 3


async def test_a_readable_body_of_the_wrong_shape_is_not_retried(stub: StubProvider) -> None:
    stub.queue(Reply(body=b'{"choices": []}'))
    with trio.fail_after(10):
        async with client_on(stub) as client:
            with pytest.raises(InvalidResponse) as caught:
                await client.complete(REQUEST)
    assert caught.value.message == "invalid response: no choices"
    assert len(stub.completions) == 1


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (401, "HTTP 401: authentication failed, check the provider API key"),
        (403, "HTTP 403: permission denied by the provider"),
    ],
)
@pytest.mark.parametrize("protocol", [Protocol.OPENAI, Protocol.ANTHROPIC])
async def test_auth_errors_never_echo_provider_text(
    stub: StubProvider, status: int, message: str, protocol: Protocol
) -> None:
    stub.queue(Reply(status=status, content=f"invalid key {KEY}"))
    with trio.fail_after(10):
        async with client_on(stub, protocol) as client:
            with pytest.raises(StatusError) as caught:
                await client.complete(REQUEST)
    assert caught.value.message == message
    assert str(caught.value) == message


async def test_other_statuses_keep_the_provider_message_cut_to_300(stub: StubProvider) -> None:
    stub.queue(
        Reply(status=400, content="max_tokens is too large"),
        Reply(status=400, body=b"x" * 500),
        Reply(status=400, body=b'{"error": "flat"}'),
    )
    messages = []
    with trio.fail_after(10):
        async with client_on(stub) as client:
            for _ in range(3):
                with pytest.raises(StatusError) as caught:
                    await client.complete(REQUEST)
                messages.append(caught.value.message)
    assert messages == [
        "HTTP 400: max_tokens is too large",
        "HTTP 400: " + "x" * 300,
        'HTTP 400: {"error": "flat"}',
    ]


async def test_a_dropped_connection_is_a_retried_transport_error(
    stub: StubProvider, autojump_clock: trio.testing.MockClock
) -> None:
    stub.queue(Reply(drop=True), Reply(drop=True), Reply(content="fine"))
    retries = Retries()
    with trio.fail_after(60):
        async with client_on(stub) as client:
            assert (await client.complete(REQUEST, retries)).content == "fine"
    assert len(stub.completions) == 3
    assert [message.split(";")[0] for _, message, _ in retries.calls] == [
        "request failed: the connection was closed without a complete answer"
    ] * 2


async def test_a_cut_body_and_a_reset_are_retried_and_never_open_the_breaker(
    stub: StubProvider, autojump_clock: trio.testing.MockClock
) -> None:
    stub.queue(*[Reply(cut=True), Reply(reset=True)] * 2, Reply(content="fine"))
    retries = Retries()
    with trio.fail_after(60):
        async with client_on(stub) as client:
            client.retry = RetryPolicy(max_retries=4)
            assert (await client.complete(REQUEST, retries)).content == "fine"
            assert client.http.breaker.tripped is None
    assert [message.split(";")[0] for _, message, _ in retries.calls] == [
        "request failed: the connection was closed without a complete answer",
        "request failed: the connection broke",
    ] * 2


async def test_an_answer_without_usage_counts_no_tokens(stub: StubProvider) -> None:
    stub.queue(Reply(content="fine", usage=None))
    with trio.fail_after(10):
        async with client_on(stub) as client:
            completion = await client.complete(REQUEST)
    assert (completion.content, completion.usage.input_tokens) == ("fine", 0)
    assert completion.usage.output_tokens == 0


async def test_refused_connection_is_a_transport_error() -> None:
    port = free_port()
    with trio.fail_after(10):
        connection = ProviderConnection(Protocol.OPENAI, f"http://127.0.0.1:{port}/v1", KEY)
        async with open_client(connection, "m", max_retries=0) as client:
            with pytest.raises(TransportError) as caught:
                await client.complete(REQUEST)
    assert caught.value.message == (
        f"request failed: cannot connect to 127.0.0.1:{port}: connection refused"
    )
    assert caught.value.retryable and not caught.value.stops_stage
    assert caught.value.connecting


async def test_a_slow_reply_times_out(
    stub: StubProvider, autojump_clock: trio.testing.MockClock
) -> None:
    stub.queue(Reply(delay=30.0), Reply(delay=30.0), Reply(content="fast"))
    start = trio.current_time()
    with trio.fail_after(100):
        async with client_on(stub, max_retries=0, request_timeout=2.0) as client:
            with pytest.raises(TransportError) as caught:
                await client.complete(REQUEST)
    assert caught.value.message == "request failed: no answer within 2s"
    assert trio.current_time() - start == pytest.approx(2.0, abs=0.01)
    retries = Retries()
    with trio.fail_after(100):
        async with client_on(stub, max_retries=2, request_timeout=2.0) as client:
            assert (await client.complete(REQUEST, retries)).content == "fast"
    assert len(retries.calls) == 1
    assert len(stub.completions) == 3


async def test_keys_stay_out_of_errors_reprs_and_logs(
    stub: StubProvider,
    autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    stub.queue(
        Reply(content="fine"),
        Reply(status=401, content=f"bad key {KEY}"),
        Reply(status=500, content="oops"),
        Reply(drop=True),
        Reply(delay=30.0),
    )
    errors: list[LlmError] = []
    with trio.fail_after(200):
        for protocol in (Protocol.OPENAI, Protocol.ANTHROPIC):
            async with client_on(stub, protocol, max_retries=1, request_timeout=5) as client:
                texts = repr(client) + repr(client.http)
                if protocol is Protocol.OPENAI:
                    await client.complete(REQUEST)
                    for _ in range(2):
                        with pytest.raises(LlmError) as caught:
                            await client.complete(REQUEST)
                        errors.append(caught.value)
                else:
                    stub.queue(Reply(status=403, content=KEY))
                    with pytest.raises(LlmError) as caught:
                        await client.complete(REQUEST)
                    errors.append(caught.value)
    assert [str(e) for e in errors] == [
        "HTTP 401: authentication failed, check the provider API key",
        "request failed: the connection was closed without a complete answer",
        "HTTP 403: permission denied by the provider",
    ]
    assert KEY in stub.requests[0].headers["authorization"]
    assert caplog.records, "nothing was logged, so the check below proves nothing"
    assert any(r.name.startswith("overbrainer") for r in caplog.records)
    logged = caplog.text + "".join(repr(r.args) for r in caplog.records)
    for text in [logged, texts, *(repr(e) for e in errors)]:
        assert KEY not in text
        assert KEY[10:] not in text
