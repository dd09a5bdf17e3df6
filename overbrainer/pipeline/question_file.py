"""A user's own questions file (JSONL or CSV), read and checked whole before anything uses it.

JSONL: one JSON object per line with the question in `question`, else `prompt`, else the
first user message of `messages`; optional string fields `topic`, `subtopic` and `answer`.
Blank lines are skipped. CSV (a name ending in `.csv`): a header row with a `question`
column and optional `topic`, `subtopic` and `answer` columns.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import attrs

from overbrainer.model.errors import UsageError

OPTIONAL = ("topic", "subtopic", "answer")
"""The optional fields of a row, beside its question."""

MAX_QUESTION_BYTES = 64 * 1024
"""The longest question accepted, in UTF-8 bytes. 64 KiB is some 16,000-20,000 tokens: four
times the default `[training] sequence_len` (4096), so no real question comes near it, while a
pasted document or a broken file (one 60 MB "question") is refused before it is paid for."""


@attrs.frozen
class QuestionRow:
    """One question of the file, with where it came from and what the file says beside it."""

    line: int
    text: str
    topic: str | None = None
    subtopic: str | None = None
    answer: str | None = None


def _blank(text: str) -> bool:
    return not text.strip()


def _optional(shown: str, line: int, raw: dict[str, object], name: str) -> str | None:
    value = raw.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise UsageError(f"{shown}:{line}: `{name}` is not a string")
    return None if _blank(value) else value.strip()


def _json_question(shown: str, line: int, raw: dict[str, object]) -> object:
    for name in ("question", "prompt"):
        if name in raw:
            return raw[name]
    messages = raw.get("messages")
    if isinstance(messages, list):
        for message in messages:
            if isinstance(message, dict) and message.get("role") == "user":
                return message.get("content")
        raise UsageError(f"{shown}:{line}: `messages` has no user message")
    raise UsageError(f"{shown}:{line}: no `question`, `prompt` or `messages` field")


def _row(shown: str, line: int, raw: dict[str, object], text: object) -> QuestionRow:
    if not isinstance(text, str):
        raise UsageError(f"{shown}:{line}: the question is not a string")
    if _blank(text):
        raise UsageError(f"{shown}:{line}: empty question")
    size = len(text.strip().encode("utf-8", errors="surrogatepass"))
    if size > MAX_QUESTION_BYTES:
        raise UsageError(
            f"{shown}:{line}: the question is {size:,} bytes, over the limit of "
            f"{MAX_QUESTION_BYTES:,} bytes (64 KiB) for one question"
        )
    topic, subtopic, answer = (_optional(shown, line, raw, name) for name in OPTIONAL)
    return QuestionRow(line, text.strip(), topic, subtopic, answer)


def _jsonl_rows(shown: str, text: str) -> list[QuestionRow]:
    rows = []
    for line, content in enumerate(text.splitlines(), start=1):
        if _blank(content):
            continue
        try:
            raw = json.loads(content)
        except json.JSONDecodeError as error:
            raise UsageError(f"{shown}:{line}: not JSON: {error.msg}") from None
        if not isinstance(raw, dict):
            raise UsageError(f"{shown}:{line}: not a JSON object")
        rows.append(_row(shown, line, raw, _json_question(shown, line, raw)))
    return rows


def _csv_rows(shown: str, text: str) -> list[QuestionRow]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if reader.fieldnames is None or "question" not in reader.fieldnames:
        raise UsageError(f"{shown}:1: no `question` column in the header row")
    rows = []
    try:
        for raw in reader:
            if None in raw:
                raise UsageError(f"{shown}:{reader.line_num}: more fields than the header row")
            fields: dict[str, object] = dict(raw)
            rows.append(_row(shown, reader.line_num, fields, fields.get("question") or ""))
    except csv.Error as error:
        raise UsageError(f"{shown}:{reader.line_num}: not CSV: {error}") from None
    return rows


def read_question_bytes(path: Path, shown: str) -> bytes:
    """The file's bytes; UsageError naming it when it cannot be read (blocking)."""
    try:
        return path.read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read {shown}: {error.strerror}") from None


def parse_question_file(data: bytes, path: Path, shown: str) -> list[QuestionRow]:
    """Every question of the file's bytes, in file order (CSV when `path` ends in `.csv`);
    UsageError naming the file and line on the first bad one, or when it has none."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UsageError(f"{shown}: not UTF-8 text") from None
    csv_file = path.name.lower().endswith(".csv")
    rows = _csv_rows(shown, text) if csv_file else _jsonl_rows(shown, text)
    if not rows:
        raise UsageError(f"{shown}: no question")
    return rows


def read_question_file(path: Path, shown: str) -> list[QuestionRow]:
    """Every question of the file at `path`, checked as `parse_question_file` does (blocking)."""
    return parse_question_file(read_question_bytes(path, shown), path, shown)
