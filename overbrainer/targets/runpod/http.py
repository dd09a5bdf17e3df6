"""The Runpod API's HTTP layer: headers, timeouts, the body limit and retries (reference §7.1)."""

from __future__ import annotations

import contextlib
import enum
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping

import attrs
import httpx2
import trio

from overbrainer import __version__
from overbrainer.llm import (
    RetryPolicy,
    address_of,
    join_url,
    parse_retry_after,
    transport_cause,
    valid_header_value,
    with_retry,
)
from overbrainer.model import redact
from overbrainer.targets.runpod.errors import RunpodError, RunpodKeyError
from overbrainer.targets.runpod.sanitize import sanitize

log = logging.getLogger(__name__)

MAX_BODY = 8 * 1024 * 1024
"""The largest answer read; a larger one is refused."""
KEY_WINDOW = 16
"""Any run of this many characters of the API key is masked in error text."""
RETRIES = 5


@attrs.frozen
class Timeouts:
    """Seconds: to connect, for a request, for `POST /pods`."""

    connect: float = 10.0
    request: float = 30.0
    create: float = 60.0


class Retry(enum.Enum):
    """Which failures a call retries."""

    TRANSIENT = "transient"
    """Transport errors, 408, 429 and 5xx: GET, DELETE, PATCH."""
    RATE_LIMIT = "rate_limit"
    """Only 429: `POST /pods`, which may have made a pod when it failed otherwise."""


@attrs.frozen
class Reply:
    """A whole answer: status, body, and the `Retry-After` seconds if any."""

    status: int
    body: bytes
    retry_after: float | None = None

    @property
    def text(self) -> str:
        """The body as text (invalid UTF-8 replaced)."""
        return self.body.decode("utf-8", "replace")

    def json(self) -> object:
        """The body decoded as JSON; raises ValueError."""
        decoded: object = json.loads(self.body)
        return decoded


class Unanswered(Exception):
    """No answer came: a transport error, a timeout, or an answer over the body limit."""

    def __init__(self, cause: str, *, too_large: bool = False) -> None:
        super().__init__(cause)
        self.cause = cause
        self.too_large = too_large


class _Again(Exception):
    """A failure worth another attempt, for `with_retry`."""

    def __init__(self, reply: Reply | None, unanswered: Unanswered | None) -> None:
        super().__init__(unanswered.cause if unanswered else f"HTTP {reply.status if reply else 0}")
        self.reply = reply
        self.unanswered = unanswered

    @property
    def retryable(self) -> bool:
        return True

    @property
    def retry_after(self) -> float | None:
        return self.reply.retry_after if self.reply is not None else None


OnRetry = Callable[[int, Exception, float], None]


def _transient_status(status: int) -> bool:
    return status in (408, 429) or status >= 500


def mask_key(text: str, key: str) -> str:
    """`text` with every run of 16 characters of `key` (and the whole key) masked."""
    if len(key) < KEY_WINDOW:
        return text.replace(key, redact.MASK) if key else text
    for start in range(len(key) - KEY_WINDOW + 1):
        window = key[start : start + KEY_WINDOW]
        if window in text:
            text = text.replace(window, redact.MASK)
    return text


class RunpodHttp:
    """One pooled connection to the API; answers come back whole, retried as asked."""

    def __init__(
        self,
        client: httpx2.AsyncClient,
        base_url: str,
        key: str,
        timeouts: Timeouts,
        policy: RetryPolicy,
        on_retry: OnRetry | None,
    ) -> None:
        self._client = client
        self._key = key
        self.base_url = base_url.rstrip("/")
        self.address = address_of(base_url)
        self.timeouts = timeouts
        self.policy = policy
        self._on_retry = on_retry

    def __repr__(self) -> str:
        return f"RunpodHttp(base_url={self.base_url!r})"

    def scrub(self, text: str) -> str:
        """Text from Runpod made safe to show: no part of the key, no registered secret."""
        return redact.redact(mask_key(text, self._key))

    async def once(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: object = None,
        limit: float | None = None,
    ) -> Reply:
        """One attempt; raises `Unanswered` when no whole answer came."""
        limit = self.timeouts.request if limit is None else limit
        content = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        headers = {"content-type": "application/json"} if content is not None else {}
        url = join_url(self.base_url, path)
        reply: Reply | None = None
        with trio.move_on_after(limit):
            try:
                async with self._client.stream(
                    method, url, params=params, content=content, headers=headers
                ) as response:
                    data = bytearray()
                    async for chunk in response.aiter_bytes():
                        data += chunk
                        if len(data) > MAX_BODY:
                            raise Unanswered("the answer is larger than 8 MiB", too_large=True)
                    after = parse_retry_after(response.headers.get("retry-after"))
                    reply = Reply(response.status_code, bytes(data), after)
            except httpx2.HTTPError as error:
                log.debug("%s %s failed: %s", method, path, type(error).__name__)
                raise Unanswered(transport_cause(error)) from None
        if reply is None:
            raise Unanswered(f"no answer within {limit:g}s")
        return reply

    async def call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: object = None,
        retry: Retry = Retry.TRANSIENT,
        limit: float | None = None,
        policy: RetryPolicy | None = None,
    ) -> Reply:
        """A call retried by `retry`; the last reply, or `Unanswered` when none came."""

        async def attempt() -> Reply:
            try:
                reply = await self.once(method, path, params=params, body=body, limit=limit)
            except Unanswered as unanswered:
                if retry is Retry.TRANSIENT and not unanswered.too_large:
                    raise _Again(None, unanswered) from None
                raise
            if reply.status == 429 or (
                retry is Retry.TRANSIENT and _transient_status(reply.status)
            ):
                raise _Again(reply, None)
            return reply

        def on_retry(number: int, error: Exception, wait: float) -> None:
            log.info("Runpod: %s %s failed (%s); retrying in %.1fs", method, path, error, wait)
            if self._on_retry is not None:
                self._on_retry(number, error, wait)

        try:
            return await with_retry(policy or self.policy, attempt, on_retry)
        except _Again as last:
            if last.reply is not None:
                return last.reply
            assert last.unanswered is not None
            raise last.unanswered from None

    @contextlib.asynccontextmanager
    async def stream(
        self, path: str, *, params: Mapping[str, str], headers: Mapping[str, str]
    ) -> AsyncIterator[httpx2.Response]:
        """A `GET` whose answer is read as it comes (an event stream); never retried."""
        url = join_url(self.base_url, path)
        try:
            async with self._client.stream(
                "GET", url, params=params, headers=dict(headers)
            ) as response:
                yield response
        except httpx2.HTTPError as error:
            raise self.unreachable("GET", path, Unanswered(transport_cause(error))) from None

    def unreachable(self, method: str, path: str, error: Unanswered) -> RunpodError:
        """The error for a call that got no answer."""
        return RunpodError(f"Runpod did not answer {method} {path} ({self.address}): {error.cause}")

    def failed(self, method: str, path: str, reply: Reply) -> RunpodError:
        """The error for an answer with a failure status (401: the fixed key message)."""
        if reply.status == 401:
            return RunpodKeyError("Runpod refused the API key", 401)
        detail = error_detail(reply)
        said = f": {self.scrub(detail)}" if detail else ""
        return RunpodError(f"Runpod answered {method} {path} with HTTP {reply.status}{said}")


def error_detail(reply: Reply) -> str:
    """`detail` of Runpod's error shape, sanitized and cut to 200 characters; else ''."""
    try:
        decoded = reply.json()
    except ValueError:
        return ""
    if isinstance(decoded, dict) and isinstance(decoded.get("detail"), str):
        return sanitize(str(decoded["detail"]))[:200]
    return ""


def runpod_shaped(reply: Reply) -> bool:
    """Whether the body is Runpod's own error shape (`title`, `detail`, `status`)."""
    try:
        decoded = reply.json()
    except ValueError:
        return False
    return (
        isinstance(decoded, dict)
        and isinstance(decoded.get("title"), str)
        and isinstance(decoded.get("detail"), str)
        and isinstance(decoded.get("status"), int)
    )


@contextlib.asynccontextmanager
async def open_runpod_http(
    base_url: str,
    key: str,
    *,
    timeouts: Timeouts | None = None,
    policy: RetryPolicy | None = None,
    on_retry: OnRetry | None = None,
) -> AsyncIterator[RunpodHttp]:
    """A pooled client for the API at `base_url`, authenticated by `key` (never shown)."""
    if not key.strip() or not valid_header_value(key):
        raise RunpodKeyError("runpod.api_key is not a valid HTTP header value")
    redact.register(key)
    chosen = timeouts or Timeouts()
    client = httpx2.AsyncClient(
        headers={
            "authorization": f"Bearer {key}",
            "user-agent": f"overbrainer/{__version__}",
            "accept": "application/json",
        },
        timeout=httpx2.Timeout(chosen.create, connect=chosen.connect),
        follow_redirects=False,
    )
    async with client:
        yield RunpodHttp(
            client, base_url, key, chosen, policy or RetryPolicy(max_retries=RETRIES), on_retry
        )
