"""Catalog strings made safe for a terminal: no escape sequences, no control characters."""

from __future__ import annotations

import re

_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]?")
_WHITESPACE_CONTROLS = re.compile(r"[\t\n\v\f\r\x85\u2028\u2029]")
_OTHER_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def sanitize(text: str) -> str:
    """Escape sequences dropped, whitespace controls made spaces, other controls dropped."""
    text = _ESCAPE.sub("", text)
    text = _WHITESPACE_CONTROLS.sub(" ", text)
    return _OTHER_CONTROLS.sub("", text)
