"""Content-hash IDs of subtopics and questions, identical to the reference tool's."""

from __future__ import annotations

import re

import xxhash

SEPARATOR = "\x1f"

# Rust's `char::is_whitespace` (Unicode White_Space) plus `char::is_control` (category Cc),
# spelled out so the split is exactly the reference's, not Python's `str.isspace`.
_BREAKS = re.compile("[\x00-\x20\x7f-\x9f\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")


def normalize(text: str) -> str:
    """Lowercase `text` and collapse whitespace and control chars to single spaces, trimmed."""
    return " ".join(piece.lower() for piece in _BREAKS.split(text) if piece)


def object_id(*parts: str) -> str:
    """XXH3-128 of the parts joined by U+001F, as 32 lowercase hex chars."""
    return str(xxhash.xxh3_128_hexdigest(SEPARATOR.join(parts).encode("utf-8")))


def subtopic_id(topic: str, name: str) -> str:
    """The ID of a subtopic: its topic as written plus its normalized name."""
    return object_id("subtopic", topic, normalize(name))


def question_id(subtopic_id: str, text: str) -> str:
    """The ID of a question (and of its answer): its subtopic's ID plus its normalized text."""
    return object_id("question", subtopic_id, normalize(text))
