"""`string_array`: read a list of strings out of a model's answer, leniently.

The answer may wrap its JSON array in prose, a code fence or an object, or be cut off by the
token limit; failing that, a plain bulleted or numbered list will do. Whitespace is the
reference's (Unicode White_Space): a U+001E record separator is text, not a space.
"""

from __future__ import annotations

import json.decoder
import re
from collections.abc import Callable

from overbrainer.model.rust_text import WHITE_SPACE_CLASS, is_whitespace, trim, trim_start

# The stdlib's own JSON string reader (C-accelerated); typeshed does not declare it.
_scan_string: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_SURROGATE = re.compile("[\ud800-\udfff]")
# A bullet (`-`, `*`, `•`) then whitespace or the end, or digits then `.` or `)`.
_MARKER = re.compile(rf"(?:[-*•](?={WHITE_SPACE_CLASS}|$)|[0-9]+[.)])")


def _array_at(text: str, start: int) -> list[str]:
    """The string items of the array whose `[` is at `start`, up to the first non-string."""
    items: list[str] = []
    pos = start + 1
    end = len(text)
    while pos < end:
        char = text[pos]
        if char == "," or is_whitespace(char):
            pos += 1
            continue
        if char != '"':
            break
        try:
            value, pos = _scan_string(text, pos + 1, True)
        except ValueError:  # unterminated, a bad escape or a raw control char
            break
        if _SURROGATE.search(value):  # a lone surrogate escape, which JSON text cannot hold
            break
        value = trim(value)
        if value:
            items.append(value)
    return items


def _plain_list(text: str) -> list[str]:
    items = []
    for line in text.split("\n"):
        line = trim_start(line)
        marker = _MARKER.match(line)
        if marker is None:
            continue
        item = trim(line[marker.end() :])
        if item:
            items.append(item)
    return items


def string_array(text: str) -> list[str] | None:
    """The answer's list of strings: the first `[` giving an item wins, else a bullet list.

    None when neither gives an item (the answer is not a list of strings).
    """
    start = text.find("[")
    while start >= 0:
        items = _array_at(text, start)
        if items:
            return items
        start = text.find("[", start + 1)
    return _plain_list(text) or None
