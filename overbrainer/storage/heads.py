"""Resume reads: the few fields of each line that "what is left" needs, without the records.

A stage with nothing to do must not build a million records to learn that. `scan_heads` reads
a data file as `read_records` does (the same blank lines, torn tail, `InvalidRecord` messages
and line numbers) but hands each line to a cheap recogniser first: a line in the exact compact
shape our own writer (and the reference's) produces gives its fields from a fixed head and
tail, and only a line it does not recognise is parsed in full. As with `example_id`, a line in
that shape is trusted for the fields taken from it; the stages that use a whole record (the
pending items, `split`) still parse it in full.

IDs are kept as `Key`s: a 64-bit keyed hash of the ID's UTF-8 bytes (`id_key`), taken
straight from the line's bytes without decoding. A set or dict of them holds about 70 bytes an
ID (the int and its slot), where the IDs as bytes held about 105 and as strings 115; a sorted
`array('q')` would hold 8, but each look-up then costs a microsecond of Python instead of a
tenth (measured: a million look-ups are a second of the stage), so the stages keep sets.

Two different IDs can share a key. The hash is Python's own for bytes (SipHash-1-3 under a
key drawn at random for each process, unless `PYTHONHASHSEED` fixes it), so for IDs not chosen
against that key a given pair shares one with odds 2**-64: among the million questions and
million answers of a big project, about 5e-8 that any question shares an answered ID's key in
one run, 5e-6 at ten million. The readers use keys only where a shared key makes them do less,
never more: a question taken for answered is not asked in that run, an answer taken for
scored-elsewhere is scored again, and the next run (another process, another key) sees them
apart; a decision to redo paid work (a force's `redo`) is checked on the exact ID.
"""

from __future__ import annotations

import codecs
import logging
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeAlias, TypeVar

from overbrainer.storage.errors import InvalidRecord
from overbrainer.storage.jsonl import missing_is_empty
from overbrainer.storage.lines import BlockLines
from overbrainer.storage.records import Example, Exclusion, Question

__all__ = [
    "AnswerHead",
    "Fast",
    "Key",
    "Line",
    "QuestionHead",
    "QuestionPlace",
    "answer_heads",
    "answer_ids",
    "fast_answer_id",
    "fast_place",
    "id_key",
    "question_heads",
    "question_places",
    "scan_heads",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

Key: TypeAlias = int
"""A record ID as held in big sets (`id_key`): see the module's docstring for shared keys."""

AnswerHead: TypeAlias = tuple[Key, str, bool]
"""An answer's ID key, topic, and whether it may train (not excluded)."""

QuestionHead: TypeAlias = tuple[Key, str]
"""A question's ID key and topic."""

QuestionPlace: TypeAlias = tuple[Key, str, Key]
"""A question's ID key, topic and subtopic ID key."""


def id_key(record_id: str) -> Key:
    """The key of `record_id`: the keyed hash of its UTF-8 bytes, as a line's bytes give it."""
    return hash(record_id.encode("utf-8"))


Fast = Callable[[bytes, int, int], T | None]
"""A line recogniser: the head of the line `buffer[start:end]`, or None to parse it in full."""

Line: TypeAlias = tuple[T, memoryview, int, int]
"""A line's head, and where the line lies: `view[start:end]` (the view of the block read)."""


def scan_heads(path: Path, fast: Fast[T], full: Callable[[str], T]) -> Iterator[Line[T]]:
    """Each record line of `path` (none when it is missing) with its head: `fast`'s when it
    recognises the line, else `full` of its text.

    Errors are `read_records`': a complete line that is not UTF-8 or that `full` refuses is
    `InvalidRecord` (`{path}:{line}: invalid record`); an unterminated last line that neither
    takes is ignored with a warning. Lines are looked at where they lie in the blocks read,
    never copied unless a line goes to `full`: a million lines cost seconds, not a minute.
    """
    number = 0
    lines = BlockLines(path)
    seen, view, utf8 = b"", memoryview(b""), False
    with missing_is_empty(path):  # then `lines.tail` stays empty
        for _, buffer, start, end in lines:
            number += 1
            if buffer is not seen:
                # A block's whole lines are UTF-8-checked once; a copied line (start 0) in full.
                seen, view = buffer, memoryview(buffer)
                utf8 = start > 0 and (
                    buffer.isascii() or _is_utf8(view[start : buffer.rfind(b"\n")])
                )
            if start == end:
                continue
            head = fast(buffer, start, end) if utf8 else None
            if head is not None:
                yield head, view, start, end
            elif found := _checked(path, number, buffer, view, start, end, fast, full):
                yield found
    carry = lines.tail
    if carry.strip():
        try:
            yield _head(carry, 0, len(carry), fast, full), memoryview(carry), 0, len(carry)
        except ValueError:
            log.warning("%s: ignoring an incomplete last line", path)


def _checked(
    path: Path,
    number: int,
    buffer: bytes,
    view: memoryview,
    start: int,
    end: int,
    fast: Fast[T],
    full: Callable[[str], T],
) -> Line[T] | None:
    """The head of a line that may not be UTF-8 or that `fast` did not take, checked in full;
    None for a line of only whitespace (skipped, as `read_records` skips it)."""
    try:
        head = _head(buffer, start, end, fast, full)
    except _Blank:
        return None
    except UnicodeDecodeError:
        raise InvalidRecord(f"{path}:{number}: invalid record", "not valid UTF-8") from None
    except ValueError as error:
        raise InvalidRecord(f"{path}:{number}: invalid record", str(error)) from error
    return head, view, start, end


class _Blank(ValueError):
    """A line of only whitespace: skipped, as `read_records` skips it."""


def _head(buffer: bytes, start: int, end: int, fast: Fast[T], full: Callable[[str], T]) -> T:
    """The head of a line: `fast`'s once the line is known to be UTF-8, else `full`'s."""
    text = buffer[start:end].decode("utf-8")
    head = fast(buffer, start, end)
    if head is not None:
        return head
    if text.isspace():
        raise _Blank
    return full(text)


def _is_utf8(data: memoryview) -> bool:
    try:
        codecs.utf_8_decode(data, "strict", True)
    except UnicodeDecodeError:
        return False
    return True


# The heads our writer gives each line: `{"id":"<32 hex>","topic":"<topic>",` then the next key.
# A topic holding `"` or `\` is escaped in JSON: such a line goes to the full parse.
_ANSWER = re.compile(rb'\{"id":"([0-9a-f]{32})","topic":"([^"\\]*)","subtopic":"')
_QUESTION = re.compile(rb'\{"id":"([0-9a-f]{32})","topic":"([^"\\]*)","subtopic_id":"')
_QUESTION_PLACE = re.compile(
    rb'\{"id":"([0-9a-f]{32})","topic":"([^"\\]*)","subtopic_id":"([0-9a-f]{32})","subtopic":"'
)
# An answer ends with its meta, and the meta with `excluded`: null or an exclusion's name.
_USABLE_END = b',"excluded":null}}'
_EXCLUDED_ENDS = tuple(f',"excluded":"{e.value}"}}}}'.encode() for e in Exclusion)

_topics: dict[bytes, str] = {}
"""Topic names decoded once each: a project has a handful, read a million times."""


def _topic(raw: bytes) -> str:
    topic = _topics.get(raw)
    if topic is None:
        topic = _topics[raw] = raw.decode("utf-8")
    return topic


def _fast_answer(line: bytes, start: int, end: int) -> AnswerHead | None:
    match = _ANSWER.match(line, start, end)
    if match is None:
        return None
    if line.endswith(_USABLE_END, start, end):
        usable = True
    elif line.endswith(_EXCLUDED_ENDS, start, end):
        usable = False
    else:
        return None
    return hash(match[1]), _topic(match[2]), usable


def _full_answer(text: str) -> AnswerHead:
    example = Example.from_json(text)
    return id_key(example.id), example.topic, example.usable


def answer_heads(path: Path) -> Iterator[Line[AnswerHead]]:
    """`scan_heads` of an answers file: each line's ID key, topic and usability."""
    return scan_heads(path, _fast_answer, _full_answer)


_ANSWER_ID = re.compile(rb'\{"id":"([0-9a-f]{32})","topic":"')


def fast_answer_id(line: bytes, start: int, end: int) -> Key | None:
    """A `Fast` recogniser of an answer line in our writer's shape: its ID key."""
    match = _ANSWER_ID.match(line, start, end)
    if match is None or not line.endswith(b"}}", start, end):
        return None
    return hash(match[1])


def _full_answer_id(text: str) -> Key:
    return id_key(Example.from_json(text).id)


def answer_ids(path: Path) -> Iterator[Line[Key]]:
    """`scan_heads` of an answers file: each line's ID key alone."""
    return scan_heads(path, fast_answer_id, _full_answer_id)


def _fast_question(line: bytes, start: int, end: int) -> QuestionHead | None:
    match = _QUESTION.match(line, start, end)
    if match is None or not line.endswith(b'"}', start, end):
        return None
    return hash(match[1]), _topic(match[2])


def _full_question(text: str) -> QuestionHead:
    question = Question.from_json(text)
    return id_key(question.id), question.topic


def question_heads(path: Path) -> Iterator[Line[QuestionHead]]:
    """`scan_heads` of a questions file: each line's ID key and topic."""
    return scan_heads(path, _fast_question, _full_question)


def fast_place(line: bytes, start: int, end: int) -> QuestionPlace | None:
    """A `Fast` recogniser of a question line in our writer's shape: its `QuestionPlace`."""
    match = _QUESTION_PLACE.match(line, start, end)
    if match is None or not line.endswith(b'"}', start, end):
        return None
    return hash(match[1]), _topic(match[2]), hash(match[3])


def _full_place(text: str) -> QuestionPlace:
    question = Question.from_json(text)
    return id_key(question.id), question.topic, id_key(question.subtopic_id)


def question_places(path: Path) -> Iterator[Line[QuestionPlace]]:
    """`scan_heads` of a questions file: each line's ID key, topic and subtopic ID key."""
    return scan_heads(path, fast_place, _full_place)
