"""One HTTP connection per provider: default headers, timeouts, status and JSON decoding."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import math
import socket
import ssl
from collections.abc import AsyncIterator, Callable, Iterator, Mapping

import httpx2
import trio

from overbrainer.llm.breaker import Breaker
from overbrainer.llm.errors import (
    ClientBuildError,
    CutBody,
    InvalidApiKey,
    MalformedBody,
    StatusError,
    TransportError,
)
from overbrainer.llm.ratelimit import RateLimitInfo, parse_rate_limits
from overbrainer.llm.shards import SHARD_CONNECTIONS, BodyBroken, ClientShards, open_shards
from overbrainer.llm.types import Json

log = logging.getLogger(__name__)

Observe = Callable[[RateLimitInfo | None], None]
"""Told the rate limits each reply states (None when it states none), errors included."""

CONNECT_TIMEOUT = 30.0
DEFAULT_REQUEST_TIMEOUT = 600.0


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a `Retry-After` header; the date form and negative values are ignored."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return seconds


def valid_header_value(value: str) -> bool:
    """Whether `value` can be sent as a header (visible ASCII, space and tab)."""
    return all(ch == "\t" or " " <= ch <= "~" for ch in value)


def address_of(base_url: str) -> str:
    """`host:port` of a base URL (the scheme's port when none is given), never its userinfo."""
    try:
        url = httpx2.URL(base_url)
    except Exception:  # a URL the config check let through cannot break an error message
        return "?"
    host = url.host or "?"
    if ":" in host:
        host = f"[{host}]"
    port = url.port or (443 if url.scheme == "https" else 80)
    return f"{host}:{port}"


def join_url(base_url: str, path: str) -> str:
    """`base_url` without trailing slashes, then `/`, then `path`."""
    return base_url.rstrip("/") + "/" + path.lstrip("/")


class HttpClient:
    """A provider's connection pool; requests return decoded JSON or raise `LlmError`."""

    def __init__(
        self,
        shards: ClientShards,
        base_url: str,
        request_timeout: float,
        provider: str = "",
    ) -> None:
        self.shards = shards
        self.base_url = base_url.rstrip("/")
        self.request_timeout = request_timeout
        self.address = address_of(base_url)
        self.breaker = Breaker(provider, self.address)

    def __repr__(self) -> str:
        return f"HttpClient(base_url={self.base_url!r})"

    async def get(self, path: str) -> Json:
        """`GET {base}/{path}` decoded as JSON."""
        return await self._send("GET", path, None)

    async def post(self, path: str, body: Json, observe: Observe | None = None) -> Json:
        """`POST {base}/{path}` with a JSON body, the answer decoded as JSON."""
        return await self._send("POST", path, json.dumps(body).encode(), observe)

    async def post_empty(self, path: str) -> Json:
        """`POST {base}/{path}` without a body (an action such as a cancel declares none)."""
        return await self._send("POST", path, None)

    async def post_content(self, path: str, content: bytes, content_type: str) -> Json:
        """`POST {base}/{path}` with a raw body of `content_type` (a multipart upload)."""
        return await self._send("POST", path, content, headers={"content-type": content_type})

    async def get_text(self, path: str) -> str:
        """`GET {base}/{path}` as text (a JSONL file's content)."""
        response = await self._request("GET", path, None)
        return response.text

    async def _send(
        self,
        method: str,
        path: str,
        content: bytes | None,
        observe: Observe | None = None,
        headers: dict[str, str] | None = None,
    ) -> Json:
        response = await self._request(method, path, content, observe, headers)
        try:
            decoded: Json = json.loads(response.content)
        except ValueError as error:
            log.debug(
                "%s %s: a %d body that is not JSON: %r",
                method,
                path,
                response.status_code,
                response.content[:120],
            )
            raise MalformedBody(str(error)) from None
        return decoded

    async def _request(
        self,
        method: str,
        path: str,
        content: bytes | None,
        observe: Observe | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx2.Response:
        """One request; a 2xx response, else the `LlmError` that says why not."""
        self.breaker.check()
        url = join_url(self.base_url, path)
        response: httpx2.Response | None = None
        with trio.move_on_after(self.request_timeout):
            try:
                response = await self.shards.request(method, url, content, headers)
            except httpx2.HTTPError as error:
                log.debug("%s %s failed: %s", method, path, type(error).__name__)
                raise self._transport_error(error) from error
            except BodyBroken as broken:
                broke = broken.__cause__
                assert isinstance(broke, httpx2.HTTPError)
                log.debug("%s %s: %s: %s", method, path, broken, type(broke).__name__)
                if 200 <= broken.status < 300:
                    raise CutBody(transport_cause(broke)) from broke
                raise TransportError(transport_cause(broke)) from broke
        if response is None:
            log.debug("%s %s timed out after %ss", method, path, self.request_timeout)
            cause = f"no answer within {self.request_timeout:g}s"
            raise TransportError(cause) from TimeoutError(cause)
        self.breaker.replied()
        if observe is not None:
            observe(parse_rate_limits(response.headers))
        status = response.status_code
        # LiteLLM's proxy passes its own `retry-after` on as `llm_provider-retry-after`.
        retry_after = parse_retry_after(
            response.headers.get("retry-after") or response.headers.get("llm_provider-retry-after")
        )
        if not 200 <= status < 300:
            raise StatusError.from_body(status, response.text, retry_after)
        return response

    def _transport_error(self, error: httpx2.HTTPError) -> Exception:
        """The error for a failed request; a connection failure may open the breaker."""
        reason = connect_reason(error)
        if reason is None:
            return TransportError(transport_cause(error))
        tripped = self.breaker.failed_to_connect(reason)
        if tripped is not None:
            return tripped
        return TransportError(f"cannot connect to {self.address}: {reason}", connecting=True)


@contextlib.asynccontextmanager
async def open_http(
    base_url: str,
    *,
    headers: Mapping[str, str] | None = None,
    secret_headers: Mapping[str, str] | None = None,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    connect_timeout: float = CONNECT_TIMEOUT,
    max_connections: int | None = None,
    provider: str = "",
    transport: httpx2.AsyncBaseTransport | None = None,
) -> AsyncIterator[HttpClient]:
    """Open the pooled connections to `provider`; `secret_headers` are never logged or shown.

    `transport` replaces the network (the embedded stand-in provider): it is one object, so it
    gets one client, whose pool it does not use.
    """
    all_headers = {"content-type": "application/json", **(headers or {})}
    for name, value in (secret_headers or {}).items():
        if not valid_header_value(value):
            raise InvalidApiKey()
        all_headers[name] = value
    timeout = httpx2.Timeout(request_timeout, connect=connect_timeout)
    try:
        tls = tls_context(base_url, transport)
    except Exception as error:  # any failure to build is reported the same way
        raise ClientBuildError() from error

    def make(connections: int | None) -> httpx2.AsyncClient:
        try:
            return httpx2.AsyncClient(
                headers=all_headers,
                timeout=timeout,
                verify=tls,
                limits=httpx2.Limits(
                    max_connections=connections, max_keepalive_connections=connections or 1024
                ),
                transport=transport,
            )
        except Exception as error:
            raise ClientBuildError() from error

    per_shard = SHARD_CONNECTIONS if transport is None else None
    async with open_shards(make, per_shard=per_shard, max_connections=max_connections) as shards:
        yield HttpClient(shards, base_url, request_timeout, provider)


def tls_context(
    base_url: str, transport: httpx2.AsyncBaseTransport | None
) -> ssl.SSLContext | bool:
    """The TLS context every client of a provider shares.

    Loading the CA store takes ~20-30 ms of CPU, so it is done once, and only for an
    `https` provider. A plain-`http` one (a local server) never opens TLS to its origin (no
    redirect is followed; a proxy has its own context): it gets a context that verifies and
    trusts nothing, so that a TLS connection, were one ever made, would fail rather than go
    unchecked. A transport (the embedded stand-in) opens no connection at all.
    """
    if transport is not None:
        return True
    if base_url.lower().startswith("http://"):
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return httpx2.create_ssl_context()


_CAUSES: tuple[tuple[type[httpx2.HTTPError], str], ...] = (
    (httpx2.ConnectTimeout, "connection timed out"),
    (httpx2.ConnectError, "cannot connect"),
    (httpx2.TimeoutException, "timed out"),
    (httpx2.RemoteProtocolError, "the connection was closed without a complete answer"),
    (httpx2.NetworkError, "the connection broke"),
)


def transport_cause(error: httpx2.HTTPError) -> str:
    """A transport failure in a few words, from its type only (never its URL or text)."""
    for kind, words in _CAUSES:
        if isinstance(error, kind):
            return words
    return type(error).__name__


def _chain(error: BaseException) -> Iterator[BaseException]:
    """`error`, its causes and contexts, and the members of exception groups among them."""
    seen: set[int] = set()
    todo = [error]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)


def connect_reason(error: httpx2.HTTPError) -> str | None:
    """Why no connection could be made, in a few words; None when one was made."""
    if isinstance(error, httpx2.ConnectTimeout):
        return "connection timed out"
    if not isinstance(error, httpx2.ConnectError):
        return None
    for inner in _chain(error):
        if isinstance(inner, socket.gaierror):
            return "host not found"
        if isinstance(inner, ssl.SSLError):
            return "TLS handshake failed"
        if isinstance(inner, OSError) and inner.errno == errno.ECONNREFUSED:
            return "connection refused"
    return "cannot connect"
