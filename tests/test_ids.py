"""IDs: the reference's pinned values, normalisation, and the part separator."""

from __future__ import annotations

import pytest
import xxhash
from hypothesis import given
from hypothesis import strategies as st

from overbrainer.storage.ids import normalize, object_id, question_id, subtopic_id

BORROWING = "d410fa975affdd150daf206922cfd8cc"


def test_the_three_pinned_ids_of_the_reference() -> None:
    assert subtopic_id("ownership", "Borrowing") == BORROWING
    assert subtopic_id("ownership", "Lifetimes") == "f778dd3965d335968c02675f354198c2"
    assert question_id(BORROWING, "What is a borrow in Rust?") == (
        "2b7f16567ded37292cec9b2ae9726e6a"
    )


def test_an_id_is_xxh3_128_over_parts_joined_by_the_unit_separator() -> None:
    assert object_id("a", "b") == xxhash.xxh3_128_hexdigest(b"a\x1fb")
    assert object_id("ab", "c") != object_id("a", "bc")
    assert object_id("x") == xxhash.xxh3_128_hexdigest(b"x")


def test_ids_are_32_lowercase_hex_chars_zero_padded() -> None:
    for text in ("", "a", "ownership", "é"):
        value = object_id(text)
        assert len(value) == 32
        assert set(value) <= set("0123456789abcdef")
        assert int(value, 16) == xxhash.xxh3_128_intdigest(text.encode())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  Hello\n\tWORLD  ", "hello world"),
        ("", ""),
        ("   ", ""),
        ("Borrowing", "borrowing"),
        ("a\x00b\x1fc\x7fd\x85e", "a b c d e"),
        ("one\u00a0two\u2003three\u3000four\u2028five", "one two three four five"),
        ("ZWSP\u200bstays", "zwsp\u200bstays"),
        ("ΟΔΟΣ ΣΟΦΟΣ", "οδος σοφος"),
        ("Straße İ", "straße i̇"),
    ],
)
def test_normalize(text: str, expected: str) -> None:
    assert normalize(text) == expected


def test_case_and_spacing_do_not_change_an_id_but_the_topic_is_not_normalized() -> None:
    assert subtopic_id("ownership", "  borrowing ") == BORROWING
    assert subtopic_id("ownership", "BORROWING\n") == BORROWING
    assert subtopic_id("Ownership", "Borrowing") != BORROWING
    first = question_id(BORROWING, "What is  X?")
    assert first == question_id(BORROWING, "what is x?")
    assert first != question_id(subtopic_id("ownership", "Lifetimes"), "what is x?")


@given(st.text())
def test_normalize_is_idempotent_and_has_no_edge_spaces(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once
    assert once == once.strip()
    assert "  " not in once
