"""Floats as serde_json writes them (Rust's `ryu`), so files match the reference byte for byte.

Python's `repr` and `ryu` find the same shortest digits; only the layout differs: `ryu` writes
`0.00002` where Python writes `2e-05`, `1e16` for `1e+16`, and `1e-7` for `1e-07`.
"""

from __future__ import annotations

import json
import json.encoder
import math
from collections.abc import Callable, Iterator
from typing import Any


def _digits(value: float) -> tuple[str, int]:
    """The shortest digits of `abs(value)` (no leading or trailing zero) and `kk`, with
    `10^(kk-1) <= abs(value) < 10^kk`."""
    text = repr(abs(value))
    mantissa, _, exponent = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    raw = whole + fraction
    stripped = raw.lstrip("0")
    point = len(whole) - (len(raw) - len(stripped)) + int(exponent or 0)
    return stripped.rstrip("0"), point


def serde_float(value: float) -> str:
    """`value` (finite) as serde_json writes an f64."""
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    digits, kk = _digits(value)
    length = len(digits)
    k = kk - length
    sign = "-" if value < 0 else ""
    if k >= 0 and kk <= 16:
        body = digits + "0" * k + ".0"
    elif 0 < kk <= 16:
        body = f"{digits[:kk]}.{digits[kk:]}"
    elif -5 < kk <= 0:
        body = "0." + "0" * -kk + digits
    else:
        rest = f".{digits[1:]}" if length > 1 else ""
        body = f"{digits[0]}{rest}e{kk - 1}"
    return sign + body


def _float_text(value: float) -> str:
    if math.isfinite(value):
        return serde_float(value)
    raise ValueError(f"out of range float value: {value!r}")


class SerdeFloatEncoder(json.JSONEncoder):
    """A `json.JSONEncoder` writing floats as serde_json does (on Python's slower path: used
    only for records that hold floats)."""

    def iterencode(self, o: Any, _one_shot: bool = False) -> Iterator[str]:
        """The encoded chunks, floats in serde_json's layout."""
        quote: Callable[[str], str] = (
            json.encoder.encode_basestring_ascii
            if self.ensure_ascii
            else json.encoder.encode_basestring
        )
        encode = json.encoder._make_iterencode(  # type: ignore[attr-defined]
            None if self.check_circular is False else {},
            self.default,
            quote,
            self.indent,
            _float_text,
            self.key_separator,
            self.item_separator,
            self.sort_keys,
            self.skipkeys,
            _one_shot,
        )
        chunks: Iterator[str] = encode(o, 0)
        return chunks
