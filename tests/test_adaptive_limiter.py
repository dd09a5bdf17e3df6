"""The adaptive limiter against a simulated rate-limited provider, on Trio's autojump clock."""

from __future__ import annotations

import math

import attrs
import pytest
import trio
import trio.testing

from overbrainer.llm.adaptive import PROBE_SECS, AdaptiveLimiter
from overbrainer.llm.ratelimit import Budget, RateLimitInfo

WINDOW = 2.0
BUDGET = 20
LATENCY = 0.2


@attrs.define
class Provider:
    """Fixed windows of `BUDGET` requests; over budget a 429 with `Retry-After`."""

    counts: dict[int, int] = attrs.field(factory=dict)
    refused: int = 0
    answered: int = 0

    async def request(self) -> tuple[int, float | None, RateLimitInfo]:
        now = trio.current_time()
        index = math.floor(now / WINDOW)
        self.counts[index] = self.counts.get(index, 0) + 1
        window_end = (index + 1) * WINDOW
        used = self.counts[index]
        if used > BUDGET:
            self.refused += 1
            await trio.sleep(LATENCY / 4)
            wait = window_end - trio.current_time()
            return 429, wait, RateLimitInfo(requests=Budget(BUDGET, 0, wait))
        await trio.sleep(LATENCY)
        self.answered += 1
        left = window_end - trio.current_time()
        return 200, None, RateLimitInfo(requests=Budget(BUDGET, BUDGET - used, max(left, 0.0)))


async def drive(provider: Provider, items: int, concurrency: int, adaptive: bool) -> float:
    """Answer `items` requests, `concurrency` at a time; the wall time on the clock."""
    limiter = AdaptiveLimiter("stub/model", concurrency)
    slots = trio.Semaphore(concurrency)

    async def one() -> None:
        async with slots:
            while True:
                ticket = await limiter.admit() if adaptive else None
                try:
                    status, retry_after, info = await provider.request()
                finally:
                    if adaptive:
                        limiter.release()
                if adaptive:
                    limiter.observe(info, ticket)
                if status == 200:
                    if adaptive:
                        limiter.succeeded()
                    return
                if adaptive and ticket is not None:
                    limiter.rate_limited(ticket, retry_after)
                await trio.sleep(retry_after or 1.0)

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        for _ in range(items):
            nursery.start_soon(one)
    return trio.current_time() - start


@pytest.mark.parametrize("adaptive", [True, False])
async def test_adaptive_reaches_the_floor_with_few_429s_and_fixed_does_not(
    autojump_clock: trio.testing.MockClock, adaptive: bool
) -> None:
    provider = Provider()
    items = 400
    wall = await drive(provider, items, concurrency=64, adaptive=adaptive)
    floor = items / BUDGET * WINDOW
    assert provider.answered == items
    if adaptive:
        assert wall <= 1.15 * floor
        assert provider.refused < 0.05 * items
    else:
        assert provider.refused > 0.05 * items


async def test_a_burst_of_429s_cuts_once_and_pauses(autojump_clock: trio.testing.MockClock) -> None:
    changes: list[tuple[int, int, str]] = []
    limiter = AdaptiveLimiter("p/m", 8, on_change=lambda *c: changes.append(c))
    limiter.observe(None)  # a first reply without headers: the probe is over
    tickets = [await limiter.admit() for _ in range(8)]
    for ticket in tickets:
        limiter.release()
        limiter.rate_limited(ticket, 3.0)
    assert changes == [(8, 6, "rate limited")]
    start = trio.current_time()
    await limiter.admit()
    assert trio.current_time() - start == pytest.approx(3.0)


async def test_successes_grow_the_limit_up_to_the_maximum(
    autojump_clock: trio.testing.MockClock,
) -> None:
    changes: list[tuple[int, int, str]] = []
    limiter = AdaptiveLimiter("p/m", 4, on_change=lambda *c: changes.append(c))
    limiter.rate_limited(await limiter.admit(), 0.1)
    limiter.release()
    assert limiter.limit == 3
    for _ in range(20):
        await limiter.admit()
        limiter.release()
        limiter.succeeded()
    assert limiter.limit == 4
    assert changes == [(4, 3, "rate limited"), (3, 4, "grown")]


async def test_one_request_probes_before_the_first_reply(
    autojump_clock: trio.testing.MockClock,
) -> None:
    limiter = AdaptiveLimiter("p/m", 8)
    await limiter.admit()
    with trio.move_on_after(PROBE_SECS / 2) as waited:
        await limiter.admit()
    assert waited.cancelled_caught
    limiter.succeeded()
    await limiter.admit()
    assert limiter.in_flight == 2


async def test_a_slow_first_reply_holds_the_rest_for_the_probe_time_only(
    autojump_clock: trio.testing.MockClock,
) -> None:
    limiter = AdaptiveLimiter("p/m", 8)
    start = trio.current_time()
    await limiter.admit()
    await limiter.admit()
    assert trio.current_time() - start == pytest.approx(PROBE_SECS)
    await limiter.admit()
    assert limiter.in_flight == 3


async def test_first_headers_seed_a_lower_limit(autojump_clock: trio.testing.MockClock) -> None:
    limiter = AdaptiveLimiter("p/m", 64)
    limiter.observe(RateLimitInfo(requests=Budget(limit=10, remaining=9, reset_after=60.0)))
    assert limiter.limit == 9
    limiter.observe(RateLimitInfo(requests=Budget(limit=10, remaining=2, reset_after=60.0)))
    assert limiter.limit == 9  # seeded once; later replies gate admission instead


async def test_no_requests_left_waits_for_the_window(
    autojump_clock: trio.testing.MockClock,
) -> None:
    limiter = AdaptiveLimiter("p/m", 4)
    limiter.observe(RateLimitInfo(requests=Budget(limit=5, remaining=0, reset_after=7.0)))
    start = trio.current_time()
    await limiter.admit()
    assert trio.current_time() - start == pytest.approx(7.0)


async def test_token_budget_gates_once_tokens_per_request_are_known(
    autojump_clock: trio.testing.MockClock,
) -> None:
    limiter = AdaptiveLimiter("p/m", 4)
    await limiter.admit()
    limiter.release()
    limiter.succeeded(tokens=1000)
    limiter.observe(RateLimitInfo(output_tokens=Budget(limit=8000, remaining=500, reset_after=5.0)))
    start = trio.current_time()
    await limiter.admit()
    assert trio.current_time() - start == pytest.approx(5.0)


async def test_a_reply_that_overtook_the_others_does_not_open_the_window(
    autojump_clock: trio.testing.MockClock,
) -> None:
    limiter = AdaptiveLimiter("p/m", 20)
    first = await limiter.admit()
    limiter.release()
    limiter.observe(RateLimitInfo(requests=Budget(limit=10, remaining=9, reset_after=5.0)), first)
    tickets = [await limiter.admit() for _ in range(9)]
    # The last one admitted arrived first (a fresh connection for the others): the provider
    # counted only it and the probe, so its reply says 8 are left. None are.
    limiter.release()
    limiter.observe(
        RateLimitInfo(requests=Budget(limit=10, remaining=8, reset_after=5.0)), tickets[-1]
    )
    start = trio.current_time()
    await limiter.admit()
    assert trio.current_time() - start >= 5.0


async def test_another_client_on_the_same_key_is_believed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    limiter = AdaptiveLimiter("p/m", 20)
    first = await limiter.admit()
    limiter.release()
    limiter.observe(RateLimitInfo(requests=Budget(limit=100, remaining=99, reset_after=9.0)), first)
    second = await limiter.admit()
    limiter.release()
    # We sent 2 of 100, but the provider says 1 is left: someone else spent the rest.
    limiter.observe(RateLimitInfo(requests=Budget(limit=100, remaining=1, reset_after=8.0)), second)
    await limiter.admit()
    start = trio.current_time()
    await limiter.admit()
    assert trio.current_time() - start >= 8.0


async def test_try_admit_admits_only_what_admit_would_not_wait_for(
    autojump_clock: trio.testing.MockClock,
) -> None:
    limiter = AdaptiveLimiter("stub/model", 2)
    assert limiter.try_admit() is not None
    assert limiter.try_admit() is None  # the first request probes alone
    limiter.observe(RateLimitInfo(requests=Budget(100, 99, 60.0)))
    assert limiter.try_admit() is not None
    assert limiter.try_admit() is None  # at the limit of 2
    assert limiter.in_flight == 2
    limiter.release()
    assert limiter.try_admit() is not None
