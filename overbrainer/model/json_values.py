"""How `--json` documents write money and times: exact decimal strings and RFC 3339 UTC."""

from __future__ import annotations

import datetime
from decimal import ROUND_HALF_EVEN, Decimal

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]
"""A value `json.dumps` writes as is."""

PICO_DOLLAR = Decimal("1e-12")
"""The step floats of money are rounded to (see `money`)."""


def money(amount: float | Decimal | None) -> str | None:
    """An amount in USD as a decimal string, never in exponent form (`"0.0000715"`).

    A float is rounded to 12 decimal places (a millionth of a micro-dollar): a price per
    million tokens with up to six decimals times whole tokens has no more, so the sum comes
    out exact, without the binary tail float arithmetic adds (`0.00007149999999999999`). A
    Decimal is written as it is.
    """
    if amount is None:
        return None
    if isinstance(amount, Decimal):
        exact = amount
    else:
        exact = Decimal(repr(float(amount))).quantize(PICO_DOLLAR, rounding=ROUND_HALF_EVEN)
    text = format(exact, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def utc_time(moment: datetime.datetime | float) -> str:
    """A moment (an aware datetime, or seconds since the epoch) as RFC 3339 UTC: `…T…Z`.

    Whole seconds are written without a fraction, as the history writes them; a moment with
    microseconds keeps them.
    """
    if not isinstance(moment, datetime.datetime):
        moment = datetime.datetime.fromtimestamp(moment, datetime.UTC)
    if moment.tzinfo is None:
        raise ValueError("a naive datetime has no time zone to write as UTC")
    moment = moment.astimezone(datetime.UTC)
    pattern = "%Y-%m-%dT%H:%M:%S.%fZ" if moment.microsecond else "%Y-%m-%dT%H:%M:%SZ"
    return moment.strftime(pattern)
