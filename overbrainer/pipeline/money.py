"""Exact USD as integers: amounts in units of 1e-30 USD, and prices per token in them.

Prices and caps are floats, and the spend cap counts the decimal each was written as (its
shortest repr: `0.1` is 1/10). Such a decimal has at most 17 significant digits, so a price of
at least $0.00000001 per million tokens has at most 24 decimals, and its price per token
(a millionth of it) is a whole number of 1e-30 USD; a cap of at least $1e-14 is one too. Costs,
sums and the cap check are then plain integer arithmetic, exactly equal to the fractions they
replace. Nanodollars would not do: a listing's `0.0000001` per token reads as
0.09999999999999999 per million, 23 decimals per token. A price or cap finer than the unit
(no provider lists one) is rounded against spending: prices up, caps down.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import NewType

import attrs

from overbrainer.model.usage import Price, Usage

UNITS_PER_USD = 10**30
"""Units of `Money` in one USD."""

TOKENS_PER_PRICE = 1_000_000
"""Prices are listed per million tokens."""

Money = NewType("Money", int)
"""An exact amount of USD, in units of 1e-30 USD."""

NO_MONEY = Money(0)


def decimal(value: float) -> Fraction:
    """The decimal a float was written as (its shortest repr), exactly: `0.1` is 1/10."""
    return Fraction(repr(float(value)))


def money_up(amount: Fraction) -> Money:
    """`amount` USD as `Money`, rounded up when finer than the unit (what may be spent)."""
    return Money(math.ceil(amount * UNITS_PER_USD))


def money_down(amount: Fraction) -> Money:
    """`amount` USD as `Money`, rounded down when finer than the unit (a cap)."""
    return Money(math.floor(amount * UNITS_PER_USD))


def in_usd(amount: int) -> Fraction:
    """`amount` as an exact fraction of USD, for messages and checks."""
    return Fraction(amount, UNITS_PER_USD)


@attrs.frozen
class TokenRates:
    """A price per token in `Money`: what a usage costs is two integer products."""

    input: int
    output: int

    def cost(self, usage: Usage) -> Money:
        """What `usage` costs, exactly."""
        return Money(usage.input_tokens * self.input + usage.output_tokens * self.output)


FREE = TokenRates(0, 0)
"""The rates of an unknown price: its requests reserve and count nothing."""


def token_rates(price: Price | None) -> TokenRates:
    """`price` per token in `Money`, worked out once per price; `FREE` when unknown."""
    if price is None:
        return FREE
    return TokenRates(
        money_up(decimal(price.input_per_million) / TOKENS_PER_PRICE),
        money_up(decimal(price.output_per_million) / TOKENS_PER_PRICE),
    )
