"""`strip_reasoning`: the answer a user sees, without `<think>` blocks (§A.9)."""

from __future__ import annotations

_OPEN = "<think>"
_CLOSE = "</think>"


def strip_reasoning(text: str) -> str:
    """`text` without its reasoning: a leading block closed by the chat template, every
    `<think>…</think>` block, and the rest after an unclosed `<think>`; trimmed."""
    first_close = text.find(_CLOSE)
    first_open = text.find(_OPEN)
    if first_close >= 0 and (first_open < 0 or first_close < first_open):
        text = text[first_close + len(_CLOSE) :]
    kept = ""
    rest = text
    while True:
        start = rest.find(_OPEN)
        if start < 0:
            kept = _join(kept, rest)
            break
        kept = _join(kept, rest[:start])
        end = rest.find(_CLOSE, start + len(_OPEN))
        if end < 0:
            break
        rest = rest[end + len(_CLOSE) :]
    return kept.strip()


def _join(kept: str, segment: str) -> str:
    """`kept + segment`, without doubling the space where a block was removed."""
    if kept.endswith(" "):
        segment = segment.lstrip(" ")
    return kept + segment
