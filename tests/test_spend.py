"""The spend ledger: reserve, settle, release, waiting for room, refusal, and the estimates."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
import trio
import trio.testing

from overbrainer.llm.types import Completion, CompletionRequest, Reasoning, ReasoningKind
from overbrainer.model.usage import Price, Usage
from overbrainer.pipeline.spend import (
    LIST_FORMAT_TOKENS,
    MESSAGE_TOKENS,
    SpendCap,
    counted_usage,
    estimate_tokens,
    exact_cost,
    usd,
    worst_usage,
)

F = Fraction
ZERO = Fraction(0)


async def test_a_settled_reservation_becomes_spend() -> None:
    ledger = SpendCap(1.0)
    reservation = await ledger.reserve(F(3, 10))
    assert reservation is not None
    assert (ledger.spent, ledger.reserved) == (ZERO, F(3, 10))
    reservation.settle(F(1, 10))
    assert (ledger.spent, ledger.reserved) == (F(1, 10), ZERO)
    reservation.release()  # already closed: nothing changes
    assert (ledger.spent, ledger.reserved, ledger.estimated) == (F(1, 10), ZERO, False)


async def test_a_released_reservation_costs_nothing() -> None:
    ledger = SpendCap(1.0)
    reservation = await ledger.reserve(F(3, 10))
    assert reservation is not None
    reservation.release()
    assert (ledger.spent, ledger.reserved) == (ZERO, ZERO)


async def test_a_reservation_left_by_an_error_or_a_cancel_is_released() -> None:
    ledger = SpendCap(1.0)
    with pytest.raises(RuntimeError):
        reservation = await ledger.reserve(F(3, 10))
        assert reservation is not None
        with reservation:
            raise RuntimeError("the request failed")
    with trio.CancelScope() as scope:
        reservation = await ledger.reserve(F(3, 10))
        assert reservation is not None
        with reservation:
            scope.cancel()
            await trio.sleep_forever()
    assert (ledger.spent, ledger.reserved) == (ZERO, ZERO)


async def test_an_estimated_settlement_marks_the_ledger() -> None:
    ledger = SpendCap(None)
    reservation = await ledger.reserve(F(1))
    assert reservation is not None
    reservation.settle(F(1, 100), estimated=True)
    assert ledger.estimated


async def test_without_a_limit_everything_is_admitted_and_counted() -> None:
    ledger = SpendCap(None)
    for _ in range(3):
        reservation = await ledger.reserve(F(10**6))
        assert reservation is not None
        reservation.settle(F(5))
    assert (ledger.spent, ledger.reached) == (F(15), False)


async def test_the_cap_is_exact_in_decimal() -> None:
    # 0.1 + 0.1 + 0.1 > 0.3 in floats; the ledger counts the decimals the user wrote.
    ledger = SpendCap(0.3)
    price = Price(0.1 * 1e6, 0.0)
    for _ in range(3):
        reservation = await ledger.reserve(exact_cost(Usage(1, 0), price))
        assert reservation is not None
        reservation.settle(exact_cost(Usage(1, 0), price))
    assert ledger.spent == F(3, 10)
    assert await ledger.reserve(F(1, 10**9)) is None


async def test_what_does_not_fit_with_nothing_in_flight_is_refused() -> None:
    ledger = SpendCap(0.5)
    first = await ledger.reserve(F(2, 5))
    assert first is not None
    first.settle(F(2, 5))
    assert await ledger.reserve(F(2, 10)) is None
    assert ledger.reached
    assert (ledger.spent, ledger.reserved, ledger.refused) == (F(2, 5), ZERO, F(1, 5))
    # Once refused, nothing starts, even what would fit.
    assert await ledger.reserve(F(1, 100)) is None
    assert ledger.error().message == (
        "spend cap reached: $0.4000 of $0.5000 (the next request could cost up to $0.2000); "
        "run the command again to continue"
    )
    assert ledger.error().reason == "spend cap reached: $0.4000 of $0.5000"


async def test_a_zero_cap_refuses_the_first_request() -> None:
    ledger = SpendCap(0.0)
    assert await ledger.reserve(F(1, 10**6)) is None
    assert ledger.spent == 0


async def test_a_reservation_waits_for_those_in_flight_to_settle(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ledger = SpendCap(0.5)
    admitted: list[tuple[str, float]] = []

    async def request(name: str, start: float, real: Fraction) -> None:
        await trio.sleep(start)
        reservation = await ledger.reserve(F(3, 10))
        if reservation is None:
            admitted.append((name + " refused", trio.current_time()))
            return
        admitted.append((name, trio.current_time()))
        with reservation:
            await trio.sleep(1)
            reservation.settle(real)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(request, "a", 0, F(1, 10))
        nursery.start_soon(request, "b", 0.1, F(1, 10))
        nursery.start_soon(request, "c", 0.2, F(3, 10))
    # b waits for a to settle at $0.10; c waits for b; after c, $0.50 is spent.
    assert admitted == [("a", 0), ("b", 1), ("c", 2)]
    assert (ledger.spent, ledger.reserved, ledger.reached) == (F(1, 2), ZERO, False)


async def test_a_request_that_fits_does_not_overtake_one_waiting_in_line(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # c would fit at once, but b asked first and waits for room: c is admitted after b.
    ledger = SpendCap(0.5)
    admitted: list[tuple[str, float]] = []

    async def request(name: str, start: float, worst: Fraction) -> None:
        await trio.sleep(start)
        reservation = await ledger.reserve(worst)
        assert reservation is not None
        admitted.append((name, trio.current_time()))
        with reservation:
            await trio.sleep(1)
            reservation.settle(F(1, 10))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(request, "a", 0, F(3, 10))
        nursery.start_soon(request, "b", 0.1, F(3, 10))
        nursery.start_soon(request, "c", 0.2, F(1, 10))
    assert admitted == [("a", 0), ("b", 1), ("c", 1)]


async def test_waiting_reservations_are_refused_with_the_first_refusal(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ledger = SpendCap(0.5)
    outcomes: list[bool] = []

    async def request(start: float) -> None:
        await trio.sleep(start)
        reservation = await ledger.reserve(F(3, 10))
        outcomes.append(reservation is not None)
        if reservation is not None:
            with reservation:
                await trio.sleep(1)
                reservation.settle(F(3, 10))

    async with trio.open_nursery() as nursery:
        for n in range(4):
            nursery.start_soon(request, n / 10)
    assert outcomes == [True, False, False, False]
    assert ledger.spent == F(3, 10)


async def test_many_requests_at_once_never_pass_the_cap(
    autojump_clock: trio.testing.MockClock,
) -> None:
    rng = random.Random(7)
    ledger = SpendCap(2.0)
    seen: list[Fraction] = []

    async def request() -> None:
        worst = F(rng.randint(1, 40), 100)
        reservation = await ledger.reserve(worst)
        if reservation is None:
            return
        seen.append(ledger.spent + ledger.reserved)
        with reservation:
            await trio.sleep(rng.random())
            if rng.random() < 0.2:
                return  # failed: released
            reservation.settle(worst * F(rng.randint(0, 100), 100))
        seen.append(ledger.spent + ledger.reserved)

    async with trio.open_nursery() as nursery:
        for _ in range(200):
            nursery.start_soon(request)
    assert ledger.reached
    assert ledger.reserved == 0
    assert max(seen) <= 2
    assert ledger.spent <= 2


def test_worst_usage_counts_a_token_per_byte_and_the_whole_output_limit() -> None:
    request = CompletionRequest("héllo", system="sys", max_tokens=500)
    assert worst_usage(request) == Usage(6 + 3 + 2 * MESSAGE_TOKENS, 500)
    listed = CompletionRequest("abc", max_tokens=100, json_list=True)
    assert worst_usage(listed) == Usage(3 + MESSAGE_TOKENS + LIST_FORMAT_TOKENS, 100)


def test_a_reply_without_usage_is_estimated_from_its_texts() -> None:
    request = CompletionRequest("a" * 30, system="b" * 3, max_tokens=500)
    reply = Completion(
        "c" * 10, Reasoning("d" * 20, ReasoningKind.RAW), Usage(), usage_reported=False
    )
    assert counted_usage(request, reply) == (Usage(11, 10), True)
    reported = Completion("c", usage=Usage(7, 8))
    assert counted_usage(request, reported) == (Usage(7, 8), False)
    assert estimate_tokens("é") == 1  # two bytes, rounded up
    assert estimate_tokens(None, "") == 0


def test_amounts_show_four_to_six_decimals() -> None:
    assert [usd(x) for x in (0.5, 0.0006, 0.00001, 0, 12.3456789, F(217, 1000))] == [
        "$0.5000",
        "$0.0006",
        "$0.00001",
        "$0.0000",
        "$12.345679",
        "$0.2170",
    ]
