"""`ProtocolClient`: one role's model on one provider connection, with retries."""

from __future__ import annotations

import contextlib
import random
from collections.abc import AsyncIterator, Mapping
from typing import Protocol as TypingProtocol

import attrs
import httpx2
import trio

from overbrainer.config.dialects import DialectSpec
from overbrainer.llm.adaptive import AdaptiveLimiter, Ticket
from overbrainer.llm.dialects import default_dialect
from overbrainer.llm.errors import StatusError, Unsupported
from overbrainer.llm.http import (
    CONNECT_TIMEOUT,
    DEFAULT_REQUEST_TIMEOUT,
    HttpClient,
    Observe,
    open_http,
)
from overbrainer.llm.protocols import wire_of
from overbrainer.llm.retry import (
    DEFAULT_MAX_RETRIES,
    Gate,
    OnRetry,
    RetryHalted,
    RetryPolicy,
    with_retry,
)
from overbrainer.llm.types import Completion, CompletionRequest, Json, Protocol
from overbrainer.model.error_groups import unwrapped


class LlmClient(TypingProtocol):
    """What the pipeline needs of a model: completions and embeddings."""

    async def complete(
        self, request: CompletionRequest, on_retry: OnRetry | None = None, gate: Gate | None = None
    ) -> Completion:
        """One answer, retried by the client's policy while `gate` is open."""
        ...

    async def embed(
        self, inputs: list[str], on_retry: OnRetry | None = None, gate: Gate | None = None
    ) -> list[list[float]]:
        """One vector per input, in input order."""
        ...


@attrs.frozen
class ProviderConnection:
    """How to reach one provider: its protocol, base URL and key, timeouts and pool size.

    `transport`, when set, replaces the network (an embedded protocol needs one); `provider`
    names the provider in unreachable-provider errors.
    """

    protocol: Protocol
    base_url: str
    api_key: str | None = attrs.field(default=None, repr=False)
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    connect_timeout: float = CONNECT_TIMEOUT
    headers: Mapping[str, str] | None = None
    max_connections: int | None = None
    provider: str = ""
    transport: httpx2.AsyncBaseTransport | None = None


@contextlib.asynccontextmanager
async def open_provider(connection: ProviderConnection) -> AsyncIterator[HttpClient]:
    """One pooled connection to a provider, with its protocol's headers and key."""
    wire = wire_of(connection.protocol)
    if wire.embedded and connection.transport is None:
        raise ValueError(f"a {connection.protocol.value} provider needs its transport")
    plain, secret = wire.headers(connection.api_key)
    async with open_http(
        connection.base_url,
        headers={**plain, **(connection.headers or {})},
        secret_headers=secret,
        request_timeout=connection.request_timeout,
        connect_timeout=connection.connect_timeout,
        max_connections=connection.max_connections,
        provider=connection.provider,
        transport=connection.transport,
    ) as http:
        yield http


class ProtocolClient:
    """`model` on a provider connection, speaking `protocol` in `dialect` (the protocol's
    default when None); requests retry by `retry`."""

    def __init__(
        self,
        http: HttpClient,
        protocol: Protocol,
        model: str,
        *,
        retry: RetryPolicy | None = None,
        rng: random.Random | None = None,
        limiter: AdaptiveLimiter | None = None,
        dialect: DialectSpec | None = None,
    ) -> None:
        self.http = http
        self.protocol = protocol
        self.dialect = dialect or default_dialect(protocol)
        self.wire = wire_of(protocol)
        self.model = model
        self.retry = retry or RetryPolicy()
        self.limiter = limiter
        self._rng = rng

    def __repr__(self) -> str:
        return (
            f"ProtocolClient(protocol={self.protocol.value!r}, "
            f"dialect={self.dialect.dialect.value!r}, model={self.model!r}, "
            f"base_url={self.http.base_url!r})"
        )

    async def complete(
        self, request: CompletionRequest, on_retry: OnRetry | None = None, gate: Gate | None = None
    ) -> Completion:
        """One answer to `request`, retried on 408, 429, 5xx and transport errors.

        With a limiter, each attempt waits to be admitted (a closed gate ends that wait at once,
        as `RetryHalted`) and tells it how the attempt went.
        """
        limiter = self.limiter
        if limiter is None:
            return await with_retry(
                self.retry, lambda: self.complete_once(request), on_retry, rng=self._rng, gate=gate
            )

        async def attempt() -> Completion:
            ticket = await _admitted(limiter, gate)
            try:
                completion = await self.complete_once(
                    request, lambda info: limiter.observe(info, ticket)
                )
            except StatusError as error:
                if error.status == 429:
                    limiter.rate_limited(ticket, error.retry_after)
                raise
            finally:
                limiter.release()
            usage = completion.usage
            tokens = usage.input_tokens + usage.output_tokens
            limiter.succeeded(tokens if completion.usage_reported else None)
            return completion

        return await with_retry(self.retry, attempt, on_retry, rng=self._rng, gate=gate)

    async def complete_once(
        self, request: CompletionRequest, observe: Observe | None = None
    ) -> Completion:
        """One attempt at `request`, without retries; `observe` sees the reply's rate limits."""
        return await self.wire.complete(self.http, self.dialect, self.model, request, observe)

    async def embed(
        self, inputs: list[str], on_retry: OnRetry | None = None, gate: Gate | None = None
    ) -> list[list[float]]:
        """One vector per input in input order; `[]` for no inputs, without a request."""
        if not self.wire.embeddings:
            raise Unsupported("embeddings")
        if not inputs:
            return []

        async def once() -> list[list[float]]:
            return await self.wire.embed(self.http, self.model, inputs)

        return await with_retry(self.retry, once, on_retry, rng=self._rng, gate=gate)

    async def models(self) -> Json:
        """The provider's raw model listing (its dialect's `models_path`), one attempt."""
        return await self.http.get(self.dialect.models_path)


async def _admitted(limiter: AdaptiveLimiter, gate: Gate | None) -> Ticket:
    """The limiter's ticket; `RetryHalted` the moment `gate` closes while waiting for it."""
    if gate is None:
        return await limiter.admit()
    if gate.closed:
        raise RetryHalted()
    ticket = limiter.try_admit()
    if ticket is not None:  # most requests: no watcher task to start and cancel
        return ticket
    async with unwrapped(), trio.open_nursery() as nursery:

        async def watch_gate() -> None:
            await gate.wait_closed()
            nursery.cancel_scope.cancel()

        nursery.start_soon(watch_gate)
        ticket = await limiter.admit()
        nursery.cancel_scope.cancel()
    if ticket is None or gate.closed:
        if ticket is not None:
            limiter.release()
        raise RetryHalted()
    return ticket


@contextlib.asynccontextmanager
async def open_client(
    connection: ProviderConnection,
    model: str,
    max_retries: int = DEFAULT_MAX_RETRIES,
    dialect: DialectSpec | None = None,
) -> AsyncIterator[ProtocolClient]:
    """A provider connection and one client for `model` on it, closed on exit."""
    async with open_provider(connection) as http:
        retry = RetryPolicy(max_retries=max_retries)
        yield ProtocolClient(http, connection.protocol, model, retry=retry, dialect=dialect)
