"""Adaptive concurrency for one (provider, model): additive increase, multiplicative decrease.

The first request goes alone (for at most `PROBE_SECS`), to learn the provider's limits; then
the limit is `concurrency`, lowered to the requests left in the window the first time a reply
states one.
A 429 cuts it by `decrease` once per cut (only a request admitted since the last cut can cut
again, so a burst of 429s from requests already in flight counts once) and admits nothing until
its `Retry-After` (else `pause`) has passed. After `limit` successes in a row it grows by one,
never above `concurrency`. Every reply's rate-limit headers refresh what is left in the
provider's windows; admission waits for a window to refill rather than send a request the
provider has said it will refuse (a window stated without a reset refills on a clock and is
probed by one request: see `windows`). A pause for the provider's limit of `ANNOUNCE_AFTER`
seconds or more goes to `on_wait` when it begins and every `ANNOUNCE_EVERY` while it lasts.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable

import attrs
import trio

from overbrainer.events.types import RateLimitWait
from overbrainer.llm.ratelimit import RateLimitInfo
from overbrainer.llm.windows import UNSTATED_WINDOW, Window, updated

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

ANNOUNCE_AFTER = 3.0
"""A pause for the provider's rate limit at least this long (seconds) is announced."""
ANNOUNCE_EVERY = 60.0
"""A long pause is announced again this often (seconds): nothing waits unannounced longer."""
RATE_LIMITED = "rate limited (429)"

OnChange = Callable[[int, int, str], None]
"""Called with the old limit, the new one and why (`rate limited`, `grown`, `headers`)."""
OnWait = Callable[[RateLimitWait], None]
"""Told each announced pause (and again every `ANNOUNCE_EVERY` while it lasts)."""


@attrs.frozen
class Ticket:
    """One admitted request: the cut generation it was admitted in, and its admission number."""

    generation: int
    sequence: int = 0
    admitted_at: float = 0.0


class AdaptiveLimiter:
    """Admits requests of one (provider, model) under a limit that follows the provider."""

    def __init__(
        self,
        name: str,
        maximum: int,
        *,
        decrease: float = DEFAULT_DECREASE,
        pause: float = DEFAULT_PAUSE,
        window: float = UNSTATED_WINDOW,
        on_change: OnChange | None = None,
        on_wait: OnWait | None = None,
    ) -> None:
        if maximum < 1:
            raise ValueError("maximum must be at least 1")
        if not 0.0 < decrease < 1.0:
            raise ValueError("decrease must be between 0 and 1")
        self.name = name
        self.maximum = maximum
        self.decrease = decrease
        self.pause = pause
        self.window = window
        self.on_change = on_change
        self.on_wait = on_wait
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
        self._requests: Window | None = None
        self._tokens: dict[str, Window] = {}
        self._tokens_per_request: float | None = None
        self._changed = trio.Event()
        self._admissions: list[float] = []
        """Admission times, oldest first (trio's clock never goes back): bisected, not scanned."""
        self._announced: tuple[float, float] | None = None
        """When the last announced pause was to end, and when it was announced."""

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

    def _wait(self, now: float) -> tuple[float, RateLimitWait | None]:
        """Seconds until a request may be admitted (0 now, `inf` until something changes), and
        the provider's rate limit that holds it, if one does (None: a probe or the
        concurrency limit, both waiting for replies already on their way)."""
        wait, why = 0.0, None
        if now < self.paused_until:
            wait = self.paused_until - now
            why = RateLimitWait(self.name, wait, RATE_LIMITED)
        if not self._replied and self.in_flight >= 1 and now < self._probe_ends:
            return max(wait, self._probe_ends - now), why  # one request probes the limits first
        if self.in_flight >= self.limit:
            return math.inf, None
        for what, window, need in self._windows():
            window.refresh(
                now, self._sent_since if window is self._requests else self._tokens_since, need
            )
            if window.remaining >= need:
                continue
            until = window.refills_at - now
            if window.probing(need):
                return max(wait, until), None  # its probe's reply comes first
            if until > wait:
                wait = until
                left = max(math.floor(window.remaining), 0)
                why = RateLimitWait(self.name, wait, "window", what, left, window.limit)
        return wait, why

    def _windows(self) -> list[tuple[str, Window, float]]:
        """Each known window that gates admission: its name, itself, what a request takes."""
        windows = []
        if self._requests is not None:
            windows.append(("requests", self._requests, 1.0))
        if self._tokens_per_request is not None:
            for name, window in self._tokens.items():
                windows.append((name.replace("_", " "), window, self._tokens_per_request))
        return windows

    def _announce(self, now: float, why: RateLimitWait) -> None:
        """Tell `on_wait` of a pause, once for its end and again every `ANNOUNCE_EVERY`."""
        if self.on_wait is None or why.seconds < ANNOUNCE_AFTER:
            return
        ends = now + why.seconds
        if self._announced is not None:
            announced_end, announced_at = self._announced
            if abs(ends - announced_end) < 1.0 and now - announced_at < ANNOUNCE_EVERY:
                return
        self._announced = (ends, now)
        self.on_wait(attrs.evolve(why, seconds=round(why.seconds, 3)))

    def _sent_since(self, moment: float) -> float:
        """Requests admitted at or after `moment`."""
        return float(len(self._admissions) - bisect.bisect_left(self._admissions, moment))

    def _tokens_since(self, moment: float) -> float:
        return self._sent_since(moment) * (self._tokens_per_request or 0.0)

    async def admit(self) -> Ticket:
        """Wait until a request may start, then count it in flight."""
        while True:
            now = trio.current_time()
            wait, why = self._wait(now)
            if now + wait <= now:  # also a wait too short for the clock's float to count
                return self._take()
            if why is not None:
                self._announce(now, why)
            changed = self._changed
            # Woken at least every ANNOUNCE_EVERY: a long pause is announced again.
            with trio.move_on_after(min(wait, ANNOUNCE_EVERY)):
                await changed.wait()

    def try_admit(self) -> Ticket | None:
        """Count a request in flight if it may start now; None if it would have to wait."""
        if self._wait(trio.current_time())[0] > 0:
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
            self._requests = updated(
                info.requests,
                self._requests,
                admitted_at,
                now,
                later,
                self._sent_since,
                float(self.in_flight + 1),
                self.window,
            )
            remaining = info.requests.remaining
            if not self._seeded and remaining is not None:
                self._seeded = True
                self._set_limit(min(self.limit, max(1, remaining)), "headers")
        spent = later * (self._tokens_per_request or 0.0)
        for name, budget in info.token_budgets().items():
            window = updated(
                budget,
                self._tokens.get(name),
                admitted_at,
                now,
                spent,
                self._tokens_since,
                (self.in_flight + 1) * (self._tokens_per_request or 0.0),
                self.window,
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
        for _, window, _ in self._windows():
            window.refused(now, retry_after)
        if ticket.generation == self.generation:
            self.generation += 1
            self._set_limit(math.floor(self.limit * self.decrease), "rate limited")
        self._notify()
