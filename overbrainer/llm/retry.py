"""Retries with exponential backoff and jitter, or the server's `Retry-After`."""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar, runtime_checkable

import attrs
import trio

log = logging.getLogger(__name__)

T = TypeVar("T")

RETRY_AFTER_CAP = 600.0
"""The longest `Retry-After` we honour, in seconds."""

DEFAULT_MAX_RETRIES = 5


@runtime_checkable
class Retryable(Protocol):
    """An error that says whether another attempt may succeed."""

    @property
    def retryable(self) -> bool:
        """Whether to try again."""
        ...

    @property
    def retry_after(self) -> float | None:
        """Seconds the server asked for, if any."""
        ...


class Gate(Protocol):
    """Whether new attempts may start (a stage closes it on Ctrl-C or when it stops)."""

    @property
    def closed(self) -> bool:
        """True once no new attempt may start."""
        ...

    async def wait_closed(self) -> None:
        """Return once the gate is closed."""
        ...

    async def before_retry(self) -> None:
        """Wait, after the backoff, until the next attempt may start (a spend cap's room for
        it); a gate that will never let it start closes instead."""
        ...


class RetryHalted(Exception):
    """No attempt was started because the gate closed: the work is left for the next run."""

    def __init__(self) -> None:
        super().__init__("stopped before the next attempt")


OnRetry = Callable[[int, Exception, float], None]
"""Called before each wait with the retry's 1-based number, the error and the wait in s."""


@attrs.frozen
class RetryPolicy:
    """At most `max_retries` retries; waits `base` doubling to `cap`, jittered."""

    max_retries: int = DEFAULT_MAX_RETRIES
    base: float = 1.0
    cap: float = 60.0

    def delay(self, attempt: int, retry_after: float | None, jitter: float) -> float:
        """The wait before retry `attempt` (0 for the first) in seconds."""
        if retry_after is not None:
            return min(retry_after, RETRY_AFTER_CAP)
        backoff = min(self.base * 2.0 ** min(attempt, 64), self.cap)
        return backoff * (0.5 + 0.5 * min(max(jitter, 0.0), 1.0))


def retry_message(error: Exception, delay: float) -> str:
    """The text of a retryable `ItemFailed`: `{error}; retrying in {secs:.1}s`."""
    return f"{error}; retrying in {delay:.1f}s"


async def with_retry(
    policy: RetryPolicy,
    op: Callable[[], Awaitable[T]],
    on_retry: OnRetry | None = None,
    *,
    rng: random.Random | None = None,
    gate: Gate | None = None,
) -> T:
    """Run `op`, retrying retryable errors by `policy`; the last error is raised.

    With a `gate`, no attempt starts once it is closed, and a wait for the next attempt
    (backoff or `Retry-After`) ends the moment it closes: `RetryHalted` is raised instead.
    After the wait, the gate's `before_retry` may hold the next attempt back further.
    """
    attempt = 0
    while True:
        if gate is not None and gate.closed:
            raise RetryHalted()
        try:
            return await op()
        except Exception as error:
            if not (isinstance(error, Retryable) and error.retryable):
                raise
            if attempt >= policy.max_retries:
                raise
            if gate is not None and gate.closed:
                raise RetryHalted() from error
            jitter = (rng or random).random()
            wait = policy.delay(attempt, error.retry_after, jitter)
            attempt += 1
            if on_retry is not None:
                on_retry(attempt, error, wait)
            log.debug("retry %d in %.1fs after: %s", attempt, wait, error)
        if gate is None:
            await trio.sleep(wait)
        else:
            with trio.move_on_after(wait):
                await gate.wait_closed()
            if not gate.closed:
                await gate.before_retry()
