"""A provider's rate-limit windows as the adaptive limiter keeps them: what is left, and when
the window refills.

A reply that states what is left but no reset (LiteLLM's proxy, some OpenAI-compatible
servers) still describes a window that refills: `x-ratelimit-*` limits are per minute at
OpenAI and LiteLLM, so such a window is taken to last `UNSTATED_WINDOW` seconds
(`[pipeline] adaptive_window_secs`), counted from the first reply of the window seen: the
window began before that reply left the provider, so it is never thought to refill early.
When an assumed refill time passes on an empty window, one request probes it; its reply says
what is left, and the others follow. A 429 empties such a window; its `Retry-After` says when
to probe.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs

from overbrainer.llm.ratelimit import Budget

UNSTATED_WINDOW = 60.0
"""Seconds a window stated without a reset is taken to last (OpenAI's and LiteLLM's minute)."""

SpentSince = Callable[[float], float]
"""What was sent (requests or tokens) since a moment on trio's clock."""


@attrs.define
class Window:
    """What is left of one provider budget, as last stated and decremented since."""

    remaining: float
    refills_at: float
    limit: int | None
    period: float = UNSTATED_WINDOW
    """How long the window is taken to last when the provider states no reset."""
    started_at: float = -math.inf
    """When this window began, as far as we know: replies to requests admitted before it
    describe an earlier window and are ignored."""
    lateness: float = 0.0
    """How late `refills_at` may be: the reply that set it came back this long after its
    request left, and the provider may have counted the reset from the request's arrival."""
    assumed: bool = False
    """`refills_at` is our guess, not the provider's word: an empty window is probed when it
    passes."""
    replied: bool = True
    """A reply of this window came back; until one does, an assumed refill is provisional."""

    def refresh(self, now: float, spent_since: SpentSince, need: float) -> None:
        """A window past its refill time starts over at its limit (unknown: unbounded), less
        what was sent since it may really have begun. An empty window whose refill was only
        assumed opens for one request (`need`), whose reply says what is really left."""
        if now < self.refills_at:
            return
        began = self.refills_at - self.lateness
        full = math.inf if self.limit is None else float(self.limit)
        left = full - spent_since(began)
        if self.assumed and self.remaining < need:
            left = min(left, need)  # a probe, not a burst
        self.remaining = left
        self.started_at = began
        # Provisional until the first reply of the new window: never waited on forever.
        self.refills_at = now + self.period
        self.lateness = 0.0
        self.assumed = True
        self.replied = False

    def probing(self, need: float) -> bool:
        """Whether the window waits for the reply of the request that probes it."""
        return self.assumed and not self.replied and self.remaining < need

    def refused(self, now: float, retry_after: float | None) -> None:
        """A 429: nothing is left of a window we only guessed; `Retry-After` says when to probe."""
        if not self.assumed:
            return
        self.remaining = min(self.remaining, 0.0)
        self.replied = True  # the refusal is the window's answer: the wait is no probe's
        if retry_after is not None:
            self.refills_at = now + retry_after
            self.lateness = 0.0


def updated(
    budget: Budget,
    current: Window | None,
    admitted_at: float,
    now: float,
    later: float,
    sent_since: SpentSince,
    unsure: float,
    period: float = UNSTATED_WINDOW,
) -> Window | None:
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
    never thought to refill early. Without a stated reset, the first reply of a window
    starts its `period`.
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
    if current is None:
        if budget.reset_after is None:
            return Window(stated, now + period, limit, period, assumed=True)
        lateness = max(now - admitted_at, 0.0)
        return Window(stated, now + budget.reset_after, limit, period, lateness=lateness)
    current.remaining = stated
    current.limit = limit
    if budget.reset_after is not None:
        refills_at = now + budget.reset_after
        if current.assumed or refills_at > current.refills_at:
            current.refills_at = refills_at
            current.lateness = max(now - admitted_at, 0.0)
            current.assumed = False
    elif current.assumed and not current.replied:
        current.refills_at = now + current.period
        current.lateness = 0.0
    current.replied = True
    return current
