"""Integer money: the same exact costs and cap decisions as the fractions of the decimals."""

from __future__ import annotations

from fractions import Fraction

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from overbrainer.llm.pricing import find_price
from overbrainer.llm.types import Json
from overbrainer.model.usage import Price, Usage
from overbrainer.pipeline.money import (
    FREE,
    UNITS_PER_USD,
    Money,
    in_usd,
    money_down,
    money_up,
    token_rates,
)
from overbrainer.pipeline.spend import Reservation, SpendCap, money


def exact(value: float) -> Fraction:
    """The reference: the decimal a float was written as, as the ledger counted it before."""
    return Fraction(repr(value))


def reference_cost(usage: Usage, price: Price) -> Fraction:
    """The reference: what `usage` costs at `price` in exact fractions of USD."""
    return (
        usage.input_tokens * exact(price.input_per_million)
        + usage.output_tokens * exact(price.output_per_million)
    ) / 1_000_000


def listed(prompt: str, completion: str) -> Price:
    """The price `llm/pricing.py` reads from an OpenRouter-style listing of per-token strings."""
    listing: Json = {"data": [{"id": "m", "pricing": {"prompt": prompt, "completion": completion}}]}
    price = find_price(listing, "m")
    assert price is not None
    return price


per_million = st.one_of(
    st.just(0.0),
    st.floats(min_value=1e-8, max_value=1e4),
    st.integers(0, 10**6).map(lambda cents: cents / 100),
)
"""Any price a role may set or a listing may give, down to $0.00000001 per million tokens."""

per_token_text = st.builds(
    lambda digits, places: f"{digits / 10**places:.{places}f}",
    st.integers(0, 10**8),
    st.integers(0, 14),
)
"""An OpenRouter per-token price: a decimal string with up to 14 places."""

usages = st.builds(Usage, st.integers(0, 10**7), st.integers(0, 10**7))
few = st.builds(Usage, st.integers(0, 2000), st.integers(0, 2000))
"""Usages of a size that brings a cap of cents and a price of dollars per million near the edge."""

limits = st.one_of(
    st.just(0.0),
    st.floats(min_value=1e-14, max_value=1e6),
    st.integers(0, 10**6).map(lambda cents: cents / 100),
)


def test_the_listings_float_noise_is_kept_exactly() -> None:
    # 0.0000001 per token reads as 0.09999999999999999 per million: 23 decimals per token,
    # finer than nanodollars; the ledger counts that decimal, as it did in fractions.
    price = listed("0.0000001", "0.0000025")
    assert price.input_per_million == 0.09999999999999999
    rates = token_rates(price)
    assert rates.input == 99_999_999_999_999_990_000_000
    assert in_usd(rates.cost(Usage(10, 1))) == reference_cost(Usage(10, 1), price)


def test_an_unknown_price_costs_nothing() -> None:
    assert token_rates(None) is FREE
    assert FREE.cost(Usage(10**6, 10**6)) == 0


def test_amounts_finer_than_the_unit_round_against_spending() -> None:
    # No provider lists such prices; a price is rounded up, a cap down, never the reverse.
    assert token_rates(Price(5e-31, 0.0)).input == 1
    assert money_up(Fraction(1, 3 * UNITS_PER_USD)) == 1
    assert money_down(Fraction(2, 3 * UNITS_PER_USD)) == 0
    assert SpendCap(1.5e-31).limit_money == 0
    assert SpendCap(1e-14).limit_money == 10**16
    assert money(Fraction(1, 3)) == UNITS_PER_USD // 3 + 1


def test_the_ledger_takes_money_and_fractions_alike() -> None:
    assert money(Money(7)) == 7
    assert money(Fraction(3, 10)) == 3 * UNITS_PER_USD // 10
    assert in_usd(money(Fraction(3, 10))) == Fraction(3, 10)


async def test_a_paid_attempt_is_retried_while_it_fits_alone_to_the_last_unit() -> None:
    # $1 cap, $0.50 reserved: paying $0.50 leaves exactly $1 for the retry (fits); one unit
    # more does not, even with nothing else in flight.
    ledger = SpendCap(1.0)
    reservation = await ledger.reserve(Fraction(1, 2))
    assert reservation is not None
    assert reservation.charge(Fraction(1, 2))
    assert ledger.reserved == 0 and not ledger.reached
    assert await reservation.renew()
    assert ledger.reserved == Fraction(1, 2)
    assert not reservation.charge(Money(1))
    assert ledger.refused == Fraction(1, 2)
    assert not await reservation.renew()
    assert ledger.reserved == 0 and ledger.in_flight == 0


@given(price=st.builds(Price, per_million, per_million), usage=usages)
def test_integer_cost_equals_the_fraction(price: Price, usage: Usage) -> None:
    assert in_usd(token_rates(price).cost(usage)) == reference_cost(usage, price)


@given(prompt=per_token_text, completion=per_token_text, usage=usages)
def test_integer_cost_equals_the_fraction_for_listed_prices(
    prompt: str, completion: str, usage: Usage
) -> None:
    price = listed(prompt, completion)
    assert in_usd(token_rates(price).cost(usage)) == reference_cost(usage, price)


@given(limit=limits)
def test_every_cap_is_exact(limit: float) -> None:
    limit_money = SpendCap(limit).limit_money
    assert limit_money is not None and in_usd(limit_money) == exact(limit)


@settings(max_examples=200, deadline=None)
@given(
    limit=limits,
    price=st.builds(Price, per_million, per_million),
    steps=st.lists(st.tuples(few, few, st.sampled_from(["settle", "pay", "release"])), max_size=40),
    window=st.integers(1, 8),
)
def test_the_cap_decides_as_the_fractions_did(
    limit: float, price: Price, steps: list[tuple[Usage, Usage, str]], window: int
) -> None:
    """Requests reserve their worst case with up to `window` in flight; the oldest settles,
    pays for an unreadable attempt, or is released. Each decision and figure is compared with
    the same ledger kept in fractions."""
    rates = token_rates(price)
    cap = Fraction(repr(limit))

    async def scenario() -> None:
        ledger = SpendCap(limit)
        spent, reserved = Fraction(0), Fraction(0)
        refused: Fraction | None = None
        open_: list[tuple[Reservation, Fraction, Usage, str]] = []

        def close_oldest() -> None:
            nonlocal spent, reserved, refused
            reservation, worst, real, how = open_.pop(0)
            cost = reference_cost(real, price)
            if how == "pay":
                fits_after = reservation.charge(rates.cost(real))
                spent += cost
                assert fits_after == (spent + worst <= cap)
                if not fits_after and refused is None:
                    refused = worst
            reserved -= worst
            if how == "settle":
                reservation.settle(rates.cost(real))
                spent += cost
            else:
                reservation.release()

        for worst_usage, real, how in steps:
            if refused is not None:
                break
            worst = reference_cost(worst_usage, price)
            while open_ and not spent + reserved + worst <= cap:
                assert not ledger.fits(rates.cost(worst_usage))
                close_oldest()
            if refused is not None:  # a paid attempt no longer fitted: nothing starts
                assert await ledger.reserve(rates.cost(worst_usage)) is None
                break
            fits = spent + reserved + worst <= cap
            assert ledger.fits(rates.cost(worst_usage)) == fits
            reservation = await ledger.reserve(rates.cost(worst_usage))
            assert (reservation is not None) == fits
            if reservation is None:
                refused = worst
            else:
                reserved += worst
                open_.append((reservation, worst, real, how))
                if len(open_) > window:
                    close_oldest()
            assert (ledger.spent, ledger.reserved, ledger.refused) == (spent, reserved, refused)
        while open_:
            close_oldest()
        assert (ledger.spent, ledger.reserved, ledger.refused) == (spent, reserved, refused)

    trio.run(scenario)
