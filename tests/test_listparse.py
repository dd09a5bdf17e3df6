"""`string_array`: every case of the reference's lenient list parser."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from overbrainer.model.rust_text import trim
from overbrainer.pipeline.listparse import string_array


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('["a", " b "]', ["a", "b"]),
        ('```json\n["a", "b", ""]\n```', ["a", "b"]),
        ('Here you go: ["a","b"] Enjoy.', ["a", "b"]),
        # A truncated array keeps its complete leading items.
        (
            '["What is a borrow?", "Why do lifetimes exist?", "How does',
            [
                "What is a borrow?",
                "Why do lifetimes exist?",
            ],
        ),
        ('["a", "b",', ["a", "b"]),
        ('["a", "b"', ["a", "b"]),
        # An object wrapping the array is found through its inner `[`.
        ('{"items": ["x", "y"]}', ["x", "y"]),
        ('{"questions":[\n  "x",\n  "y"\n]}', ["x", "y"]),
        # `[3]` and `[1]` in prose are skipped.
        ('As noted in [3], here they are: ["p", "q"]', ["p", "q"]),
        ('["a"] see [1]', ["a"]),
        # The first `[` that yields an item wins.
        ('["a"] and ["b"]', ["a"]),
        ('[] then ["b"]', ["b"]),
        ('["", "  "] then ["b"]', ["b"]),
        # Reading stops at the first element that is not a string.
        ('["a", 2, "b"]', ["a"]),
        ('["a", null]', ["a"]),
        ('[["a", "b"]]', ["a", "b"]),
        # JSON escapes are unescaped, then items are trimmed.
        (
            '["tab\\there", "quote \\"q\\"", "\\u00e9t\\u00e9", "\\ud83d\\ude00"]',
            [
                "tab\there",
                'quote "q"',
                "été",
                "😀",
            ],
        ),
        ('[" \\n spaced \\t "]', ["spaced"]),
        # Separators are whitespace and commas, in any number.
        ('[ "a" ,, "b"\n,\t"c" ]', ["a", "b", "c"]),
        ('["a""b"]', ["a", "b"]),
        # A bad escape or a lone surrogate ends the array like an unterminated string.
        ('["a", "b\\x"]', ["a"]),
        ('["a", "\\ud800"]', ["a"]),
        ('["a", "raw\nnewline"]', ["a"]),
    ],
)
def test_json_arrays(text: str, expected: list[str]) -> None:
    assert string_array(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- one\n- two\n", ["one", "two"]),
        ("* one\n  * two\n• three", ["one", "two", "three"]),
        ("1. one\n2) two\n10. ten", ["one", "two", "ten"]),
        ("Here are some:\n\n1. one\nnot an item\n-\n- \n2.   two  \r\n", ["one", "two"]),
        ("-one\n- two", ["two"]),
        ("1.5 litres\n", ["5 litres"]),
        ("\t-\tindented with a tab", ["indented with a tab"]),
        # Brackets that give no string item fall back to the plain list.
        ("See [1]:\n- one\n- two", ["one", "two"]),
        ("[3] items:\n1. x", ["x"]),
    ],
)
def test_plain_text_lists(text: str, expected: list[str]) -> None:
    assert string_array(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "no list here",
        "[1, 2, 3]",
        "[3] and [1] only",
        '["unterminated',
        "] backwards [",
        "[]",
        '["", " "]',
        "- \n* \n1.",
        "a - b\nx * y",
        "one.\ntwo)",
    ],
)
def test_nothing_is_none(text: str) -> None:
    assert string_array(text) is None


@given(st.lists(st.text()))
def test_any_json_array_of_strings_reads_back_trimmed(items: list[str]) -> None:
    expected = [trim(item) for item in items if trim(item)]
    result = string_array("Sure! " + json.dumps(items) + " Done.")
    assert result == (expected or None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # U+001C..U+001F are whitespace to Python, text to the reference (Rust White_Space).
        ('["\\u001e", "a"]', ["\x1e", "a"]),
        ('["Moves\\u001e", " Traits\\u001f"]', ["Moves\x1e", "Traits\x1f"]),
        ("- x\x1e\n- y", ["x\x1e", "y"]),
        ("-\x1eitem\n- b", ["b"]),
        ("\x1e- x\n* y", ["y"]),
        ("1.\x1fitem\n\u3000- y\u2028", ["\x1fitem", "y"]),
    ],
)
def test_only_unicode_white_space_is_whitespace(text: str, expected: list[str]) -> None:
    assert string_array(text) == expected
