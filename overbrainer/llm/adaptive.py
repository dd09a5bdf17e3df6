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

import bisect
import math
from collections.abc import Callable

import attrs
import trio

from overbrainer.llm.ratelimit import Budget, RateLimitInfo

DEFAULT_DECREASE = 0.75
"""The cut on a 429 (NeMo Data Designer's factor)."""
DEFAULT_PAUSE = 1.0
"""Seconds to admit nothing after a 429 that gave no `Retry-After`."""
PROBE_SECS = 0.5
"""How long the first request goes alone at most: a slow first answer never holds the rest."""
TOKENS_SMOOTHING = 0.2
"""Weight of the newest request in the running average of tokens per request."""

ADMISSIONS_KEPT = 100_000
"""Admission times kept, to count what was sent since a window began."""

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
    lateness: float = 0.0
    """How late `refills_at` may be: the reply that set it came back this long after its
    request left, and the provider may have counted the reset from the request's arrival."""

    def refresh(self, now: float, spent_since: Callable[[float], float]) -> None:
        """A window past its refill time starts over at its limit (unknown: unbounded), less
        what was sent since it may really have begun."""
        if now >= self.refills_at:
            began = self.refills_at - self.lateness
            full = math.inf if self.limit is None else float(self.limit)
            self.remaining = full - spent_since(began)
            self.started_at = began
            self.refills_at = math.inf


def _window(
    budget: Budget,
    current: _Window | None,
    admitted_at: float,
    now: float,
    later: float,
    sent_since: Callable[[float], float],
    unsure: float,
) -> _Window | None:
    """The window after a reply.

    The reply says what was left when its request arrived; the requests admitted after it are
    taken off (`later`). Requests do not always arrive in the order they left (new
    connections), which makes that count off by up to what is in flight (`unsure`). So once
    the window is known and the provider states its limit, what is left is the limit less
    what this process sent since the window began — exact whatever the order — unless the
    reply says clearly less (another process using the same key) or nothing at all. A reply
    to a request admitted before the current window began is about an earlier one and
    changes nothing. Whether a provider counts the reset from the request's arrival or from
    its reply differs, so it is counted from the reply (the later of the two): a window is
    never thought to refill early.
    """
    if budget.remaining is None:
        return current
    if current is not None and admitted_at < current.started_at:
        return current  # admitted before the window we know began: stale
    began = -math.inf if current is None else current.started_at
    limit = budget.limit if budget.limit is not None else (current.limit if current else None)
    stated = float(budget.remaining) - later
    if current is not None and limit is not None and budget.remaining > 0:
        ours = float(limit) - sent_since(began)
        if stated >= ours - unsure:
            stated = ours
    refills_at = math.inf if budget.reset_after is None else now + budget.reset_after
    lateness = max(now - admitted_at, 0.0)
    if current is None:
        return _Window(stated, refills_at, limit, lateness=lateness)
    current.remaining = stated
    if current.refills_at == math.inf or refills_at > current.refills_at:
        current.refills_at = refills_at
        current.lateness = lateness
    current.limit = limit
    return current


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
        self._admissions: list[float] = []
        """Admission times, oldest first (trio's clock never goes back): bisected, not scanned."""

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
            window.refresh(
                now, self._sent_since if window is self._requests else self._tokens_since
            )
            if window.remaining < amount:
                wait = max(wait, window.refills_at - now)
        return wait

    def _sent_since(self, moment: float) -> float:
        """Requests admitted at or after `moment`."""
        return float(len(self._admissions) - bisect.bisect_left(self._admissions, moment))

    def _tokens_since(self, moment: float) -> float:
        return self._sent_since(moment) * (self._tokens_per_request or 0.0)

    async def admit(self) -> Ticket:
        """Wait until a request may start, then count it in flight."""
        while True:
            now = trio.current_time()
            wait = self._wait(now)
            if wait <= 0:
                return self._take()
            changed = self._changed
            with trio.move_on_after(wait):
                await changed.wait()

    def try_admit(self) -> Ticket | None:
        """Count a request in flight if it may start now; None if it would have to wait."""
        if self._wait(trio.current_time()) > 0:
            return None
        return self._take()

    def _take(self) -> Ticket:
        if self.admitted == 0:
            self._probe_ends = trio.current_time() + PROBE_SECS
        self.in_flight += 1
        self.admitted += 1
        self._admissions.append(trio.current_time())
        if len(self._admissions) > 2 * ADMISSIONS_KEPT:
            del self._admissions[:ADMISSIONS_KEPT]  # amortised: one cut per ADMISSIONS_KEPT
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
            self._requests = _window(
                info.requests,
                self._requests,
                admitted_at,
                now,
                later,
                self._sent_since,
                float(self.in_flight + 1),
            )
            remaining = info.requests.remaining
            if not self._seeded and remaining is not None:
                self._seeded = True
                self._set_limit(min(self.limit, max(1, remaining)), "headers")
        spent = later * (self._tokens_per_request or 0.0)
        for name, budget in info.token_budgets().items():
            window = _window(
                budget,
                self._tokens.get(name),
                admitted_at,
                now,
                spent,
                self._tokens_since,
                (self.in_flight + 1) * (self._tokens_per_request or 0.0),
            )
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
