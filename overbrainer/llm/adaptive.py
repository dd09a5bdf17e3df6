"""Adaptive concurrency for one (provider, model): additive increase, multiplicative decrease.

The first request goes alone (for at most `PROBE_SECS`), to learn the provider's limits; then
the limit is `concurrency`, lowered to the requests left in the window the first time a reply
states one.
A 429 cuts it by `decrease` once per cut (only a request admitted since the last cut can cut
again, so a burst of 429s from requests already in flight counts once) and admits nothing until
its `Retry-After` (else `pause`) has passed. After `limit` successes in a row it grows by one,
never above `concurrency`. Every reply's rate-limit headers refresh what is left in the
provider's windows; admission waits for a window to refill rather than send a request the
provider has said it will refuse.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs
import trio

from overbrainer.llm.ratelimit import Budget, RateLimitInfo

DEFAULT_DECREASE = 0.75
"""The cut on a 429 (NeMo Data Designer's factor)."""
DEFAULT_PAUSE = 1.0
"""Seconds to admit nothing after a 429 that gave no `Retry-After`."""
PROBE_SECS = 2.0
"""How long the first request goes alone at most: a slow first answer never holds the rest."""
TOKENS_SMOOTHING = 0.2
"""Weight of the newest request in the running average of tokens per request."""

OnChange = Callable[[int, int, str], None]
"""Called with the old limit, the new one and why (`rate limited`, `grown`, `headers`)."""


@attrs.frozen
class Ticket:
    """One admitted request: the cut generation it was admitted in, and its admission number."""

    generation: int
    sequence: int = 0
    admitted_at: float = 0.0


@attrs.define
class _Window:
    """What is left of one provider budget, as last stated and decremented since."""

    remaining: float
    refills_at: float
    limit: int | None
    started_at: float = -math.inf
    """When this window began, as far as we know: replies to requests admitted before it
    describe an earlier window and are ignored."""

    def refresh(self, now: float) -> None:
        """A window past its refill time starts over at its limit (unknown: unbounded)."""
        if now >= self.refills_at:
            self.remaining = math.inf if self.limit is None else float(self.limit)
            self.started_at = self.refills_at
            self.refills_at = math.inf


def _window(
    budget: Budget, current: _Window | None, admitted_at: float, now: float, spent_since: float
) -> _Window | None:
    """The window a reply describes, or `current` when the reply is about an earlier one.

    Whether a provider counts the reset from the request's arrival or from its reply differs,
    so it is taken from the reply (the later of the two): a window is never thought to refill
    before it does.
    """
    if budget.remaining is None:
        return current
    if current is not None and admitted_at < current.started_at:
        return current  # admitted before the window we know began: stale
    refills_at = math.inf if budget.reset_after is None else now + budget.reset_after
    return _Window(
        remaining=float(budget.remaining) - spent_since,
        refills_at=refills_at,
        limit=budget.limit,
        started_at=current.started_at if current is not None else -math.inf,
    )


class AdaptiveLimiter:
    """Admits requests of one (provider, model) under a limit that follows the provider."""

    def __init__(
        self,
        name: str,
        maximum: int,
        *,
        decrease: float = DEFAULT_DECREASE,
        pause: float = DEFAULT_PAUSE,
        on_change: OnChange | None = None,
    ) -> None:
        if maximum < 1:
            raise ValueError("maximum must be at least 1")
        if not 0.0 < decrease < 1.0:
            raise ValueError("decrease must be between 0 and 1")
        self.name = name
        self.maximum = maximum
        self.decrease = decrease
        self.pause = pause
        self.on_change = on_change
        self.limit = maximum
        self.in_flight = 0
        self.paused_until = -math.inf
        self.generation = 0
        self.rate_limited_count = 0
        self.admitted = 0
        self._streak = 0
        self._seeded = False
        self._replied = False
        self._probe_ends = math.inf
        self._requests: _Window | None = None
        self._tokens: dict[str, _Window] = {}
        self._tokens_per_request: float | None = None
        self._changed = trio.Event()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def _got_reply(self) -> None:
        if not self._replied:
            self._replied = True
            self._notify()

    def _set_limit(self, new: int, reason: str) -> None:
        new = max(1, min(self.maximum, new))
        if new == self.limit:
            return
        old, self.limit = self.limit, new
        if self.on_change is not None:
            self.on_change(old, new, reason)
        self._notify()

    def _wait(self, now: float) -> float:
        """Seconds until a request may be admitted: 0 now, `inf` until something changes."""
        if now < self.paused_until:
            return self.paused_until - now
        if not self._replied and self.in_flight >= 1 and now < self._probe_ends:
            return self._probe_ends - now  # one request probes the limits first
        if self.in_flight >= self.limit:
            return math.inf
        wait = 0.0
        windows = [self._requests] if self._requests is not None else []
        need = [1.0] * len(windows)
        if self._tokens_per_request is not None:
            windows += self._tokens.values()
            need += [self._tokens_per_request] * len(self._tokens)
        for window, amount in zip(windows, need, strict=True):
            window.refresh(now)
            if window.remaining < amount:
                wait = max(wait, window.refills_at - now)
        return wait

    async def admit(self) -> Ticket:
        """Wait until a request may start, then count it in flight."""
        while True:
            now = trio.current_time()
            wait = self._wait(now)
            if wait <= 0:
                break
            changed = self._changed
            with trio.move_on_after(wait):
                await changed.wait()
        if self.admitted == 0:
            self._probe_ends = trio.current_time() + PROBE_SECS
        self.in_flight += 1
        self.admitted += 1
        if self._requests is not None:
            self._requests.remaining -= 1
        if self._tokens_per_request is not None:
            for window in self._tokens.values():
                window.remaining -= self._tokens_per_request
        return Ticket(self.generation, self.admitted, trio.current_time())

    def release(self) -> None:
        """The request ended (whatever its outcome): its place is free."""
        self.in_flight -= 1
        self._notify()

    def observe(self, info: RateLimitInfo | None, ticket: Ticket | None = None) -> None:
        """A reply's headers: refresh the windows; the first one may lower the limit.

        The provider counted what was left when the request of `ticket` arrived: the requests
        admitted after it are taken off again, since the provider counts them after it.
        """
        self._got_reply()
        if info is None:
            return
        now = trio.current_time()
        later = 0 if ticket is None else max(self.admitted - ticket.sequence, 0)
        admitted_at = now if ticket is None else ticket.admitted_at
        if info.requests is not None:
            self._requests = _window(info.requests, self._requests, admitted_at, now, later)
            remaining = info.requests.remaining
            if not self._seeded and remaining is not None:
                self._seeded = True
                self._set_limit(min(self.limit, max(1, remaining)), "headers")
        spent = later * (self._tokens_per_request or 0.0)
        for name, budget in info.token_budgets().items():
            window = _window(budget, self._tokens.get(name), admitted_at, now, spent)
            if window is not None:
                self._tokens[name] = window
        self._notify()

    def succeeded(self, tokens: int | None = None) -> None:
        """A request was answered: a run of `limit` of them grows the limit by one."""
        self._got_reply()
        if tokens is not None and tokens > 0:
            average = self._tokens_per_request
            self._tokens_per_request = (
                float(tokens)
                if average is None
                else average + TOKENS_SMOOTHING * (tokens - average)
            )
        self._streak += 1
        if self._streak >= self.limit:
            self._streak = 0
            self._set_limit(self.limit + 1, "grown")

    def rate_limited(self, ticket: Ticket, retry_after: float | None) -> None:
        """A 429: pause admission; cut the limit once per generation of admitted requests."""
        self._got_reply()
        self.rate_limited_count += 1
        self._streak = 0
        now = trio.current_time()
        self.paused_until = max(self.paused_until, now + (retry_after or self.pause))
        if ticket.generation == self.generation:
            self.generation += 1
            self._set_limit(math.floor(self.limit * self.decrease), "rate limited")
        self._notify()
