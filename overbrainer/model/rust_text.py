"""Whitespace as the reference (Rust) sees it: the Unicode White_Space property.

Python's `str.isspace`, `strip` and regex `\\s` also take U+001C..U+001F (the file, group,
record and unit separators) for whitespace; Rust's `char::is_whitespace` and `str::trim` do
not. Where the reference trims or splits on whitespace, these keep the same answer.
"""

from __future__ import annotations

WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
"""Every char with the Unicode White_Space property."""

WHITE_SPACE_CLASS = "[" + WHITE_SPACE.replace("\\", "\\\\") + "]"
"""`WHITE_SPACE` as a regex character class."""

_WHITE_SPACE = frozenset(WHITE_SPACE)


def is_whitespace(char: str) -> bool:
    """Rust's `char::is_whitespace`."""
    return char in _WHITE_SPACE


def trim(text: str) -> str:
    """Rust's `str::trim`."""
    return text.strip(WHITE_SPACE)


def trim_start(text: str) -> str:
    """Rust's `str::trim_start`."""
    return text.lstrip(WHITE_SPACE)
