"""Rate-limit windows stated without a reset, 429s and announced waits, on the autojump clock."""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing

from overbrainer.events.types import RateLimitWait, Stage
from overbrainer.llm.adaptive import ANNOUNCE_EVERY, AdaptiveLimiter, Ticket
from overbrainer.llm.ratelimit import Budget, RateLimitInfo, parse_rate_limits
from overbrainer.llm.windows import UNSTATED_WINDOW
from overbrainer.ui.bar import StageTally
from overbrainer.ui.progress import Progress, wait_words

LIMIT = 30


def litellm(remaining: int) -> RateLimitInfo:
    """What LiteLLM's proxy states: the limit and what is left, no reset."""
    info = parse_rate_limits(
        {"x-ratelimit-limit-requests": str(LIMIT), "x-ratelimit-remaining-requests": str(remaining)}
    )
    assert info is not None
    return info


async def spend_window(limiter: AdaptiveLimiter) -> list[Ticket]:
    """Admit and answer the whole window, each reply saying what is left (down to -4)."""
    tickets = []
    for n in range(LIMIT):
        ticket = await limiter.admit()
        tickets.append(ticket)
        limiter.release()
        limiter.observe(litellm(LIMIT - 1 - n), ticket)
        limiter.succeeded()
    return tickets


async def test_negative_remaining_means_none_left() -> None:
    info = litellm(-4)
    assert info.requests == Budget(limit=LIMIT, remaining=-4)


async def test_a_window_without_reset_refills_after_a_minute_with_one_probe(
    autojump_clock: trio.testing.MockClock,
) -> None:
    waits: list[RateLimitWait] = []
    limiter = AdaptiveLimiter("litellm/m", 64, on_wait=waits.append)
    first_reply = trio.current_time()
    await spend_window(limiter)
    start = trio.current_time()
    with trio.fail_after(2 * UNSTATED_WINDOW):
        probe = await limiter.admit()
    resumed = trio.current_time()
    assert first_reply + UNSTATED_WINDOW <= resumed <= start + UNSTATED_WINDOW + 1.0
    # The probe goes alone: nothing else is sent before its reply.
    with trio.move_on_after(10.0) as alone:
        await limiter.admit()
    assert alone.cancelled_caught
    limiter.release()
    limiter.observe(litellm(LIMIT - 1), probe)
    limiter.succeeded()
    for _ in range(LIMIT - 1):
        await limiter.admit()
    assert trio.current_time() - resumed == pytest.approx(10.0)  # the rest followed at once
    assert [(w.reason, w.budget, w.remaining, w.limit) for w in waits] == [
        ("window", "requests", 0, LIMIT)
    ]
    assert waits[0].seconds == pytest.approx(UNSTATED_WINDOW, abs=1.0)


async def test_an_overdrawn_window_is_announced_as_none_left(
    autojump_clock: trio.testing.MockClock,
) -> None:
    waits: list[RateLimitWait] = []
    limiter = AdaptiveLimiter("litellm/m", 64, on_wait=waits.append)
    ticket = await limiter.admit()
    limiter.release()
    limiter.observe(litellm(-4), ticket)
    with trio.move_on_after(1.0):
        await limiter.admit()
    assert wait_words(waits[0]) == (
        "waiting for the provider's rate limit: 0 of 30 requests left, resuming in 60 s"
    )


async def test_a_probe_that_learns_nothing_probes_again_a_window_later(
    autojump_clock: trio.testing.MockClock,
) -> None:
    limiter = AdaptiveLimiter("litellm/m", 64)
    await spend_window(limiter)
    with trio.fail_after(2 * UNSTATED_WINDOW):
        await limiter.admit()
    probed = trio.current_time()
    limiter.release()  # a 500 without headers: no word on the window
    with trio.fail_after(2 * UNSTATED_WINDOW):
        await limiter.admit()
    assert trio.current_time() - probed == pytest.approx(UNSTATED_WINDOW)


async def test_a_429_with_retry_after_and_no_reset_sends_again_after_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    waits: list[RateLimitWait] = []
    limiter = AdaptiveLimiter("litellm/m", 64, on_wait=waits.append)
    first = await limiter.admit()
    limiter.release()
    limiter.observe(litellm(LIMIT - 1), first)
    tickets = [await limiter.admit() for _ in range(5)]
    refused = tickets[-1]
    limiter.release()
    limiter.observe(None, refused)  # LiteLLM's 429 states no window
    limiter.rate_limited(refused, 7.0)
    start = trio.current_time()
    with trio.fail_after(2 * UNSTATED_WINDOW):
        await limiter.admit()
    assert trio.current_time() - start == pytest.approx(7.0)
    assert waits == [RateLimitWait("litellm/m", 7.0, "rate limited (429)")]
    with trio.move_on_after(5.0) as alone:  # the one after the pause probes alone
        await limiter.admit()
    assert alone.cancelled_caught


async def test_a_429_without_retry_after_waits_for_the_window_clock(
    autojump_clock: trio.testing.MockClock,
) -> None:
    waits: list[RateLimitWait] = []
    limiter = AdaptiveLimiter("litellm/m", 64, pause=1.0, on_wait=waits.append)
    first = await limiter.admit()
    limiter.release()
    limiter.observe(litellm(LIMIT - 1), first)
    window_began = trio.current_time()
    await trio.sleep(10.0)
    refused = await limiter.admit()
    limiter.release()
    limiter.rate_limited(refused, None)
    with trio.fail_after(2 * UNSTATED_WINDOW):
        probe = await limiter.admit()
    assert trio.current_time() - window_began == pytest.approx(UNSTATED_WINDOW)
    assert [(w.reason, w.remaining, round(w.seconds)) for w in waits] == [("window", 0, 50)]
    # The probe is refused too, without a word on when: the next window, announced again.
    limiter.release()
    limiter.rate_limited(probe, None)
    with trio.fail_after(2 * UNSTATED_WINDOW):
        await limiter.admit()
    assert trio.current_time() - window_began == pytest.approx(2 * UNSTATED_WINDOW)
    assert [(w.reason, w.remaining, round(w.seconds)) for w in waits][1:] == [("window", 0, 60)]


async def test_a_long_wait_is_announced_at_least_every_minute(
    autojump_clock: trio.testing.MockClock,
) -> None:
    announced: list[tuple[float, RateLimitWait]] = []
    limiter = AdaptiveLimiter(
        "openai/m", 8, on_wait=lambda wait: announced.append((trio.current_time(), wait))
    )
    first = await limiter.admit()
    limiter.release()
    limiter.observe(RateLimitInfo(requests=Budget(100, 0, 300.0)), first)
    start = trio.current_time()

    async def send() -> None:
        await limiter.admit()
        limiter.release()

    async with trio.open_nursery() as nursery:
        for _ in range(3):  # several waiters, one announcement each time
            nursery.start_soon(send)
    assert trio.current_time() - start == pytest.approx(300.0)
    times = [at - start for at, _ in announced]
    assert times == pytest.approx([n * ANNOUNCE_EVERY for n in range(5)])
    assert [round(wait.seconds) for _, wait in announced] == [300, 240, 180, 120, 60]
    assert {(w.reason, w.remaining, w.limit) for _, w in announced} == {("window", 0, 100)}


async def test_a_short_wait_is_not_announced(autojump_clock: trio.testing.MockClock) -> None:
    waits: list[RateLimitWait] = []
    limiter = AdaptiveLimiter("p/m", 8, on_wait=waits.append)
    ticket = await limiter.admit()
    limiter.release()
    limiter.rate_limited(ticket, 2.0)
    await limiter.admit()
    assert waits == []


def test_the_wait_is_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="overbrainer.ui.progress"):
        Progress().log(RateLimitWait("litellm/m", 40.2, "window", "requests", 0, 30), now=0.0)
        Progress().log(RateLimitWait("litellm/m", 12.0, "rate limited (429)"), now=0.0)
    assert caplog.messages == [
        "litellm/m: waiting for the provider's rate limit: 0 of 30 requests left, resuming in 41 s",
        "litellm/m: waiting for the provider's rate limit: rate limited (429), resuming in 12 s",
    ]


def test_the_bar_says_when_sending_resumes() -> None:
    tally = StageTally(Stage.ANSWERS, 60, started=0.0, finished=30, worked=30)
    tally.resumes_at = 50.0
    assert tally.time_words(9.0) == "3.3/s, rate limit, resuming in 41s"
    assert tally.time_words(51.0) == "35.3/min, ETA 51s"
