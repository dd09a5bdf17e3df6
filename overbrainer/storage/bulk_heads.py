"""Resume reads of whole blocks: the heads of a file our writer wrote, without a call a line.

`scan_heads` looks at each line in turn, a few Python calls each: two million lines are
seconds. Most data files are wholly in our writer's shape, and then a block of lines can be
checked and its fields taken by a few calls over the block or its list of lines.
These readers take that path only while every line of every block is in the shape (and the
file is UTF-8 and ends with a newline); at the first block that is not, they return False and
the caller reads the file with `scan_heads` instead, which has the same answer for a file
in the shape and the errors and warnings of `read_records` for one that is not.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from overbrainer.storage.heads import Key
from overbrainer.storage.jsonl import missing_is_empty
from overbrainer.storage.lines import line_blocks, read_blocks

__all__ = ["fold_answer_keys", "fold_lines", "fold_matches"]


class _NotInShape(Exception):
    """A block with a line not in our writer's shape, or a file that does not end whole."""


def _whole_blocks(path: Path) -> Iterator[bytes]:
    """The blocks of whole lines of `path`, each UTF-8 (none when it is missing); raises
    `_NotInShape` for a block that is not UTF-8 or an unterminated last line."""
    with missing_is_empty(path):
        for block, is_tail in line_blocks(path):
            if is_tail:
                if block:
                    raise _NotInShape
                return
            if not block.isascii():
                try:
                    codecs.utf_8_decode(block, "strict", True)
                except UnicodeDecodeError:
                    raise _NotInShape from None
            yield block


def fold_lines(path: Path, take: Callable[[list[bytes]], bool]) -> bool:
    """Give `take` each block's lines (whole, UTF-8, newline excluded) in file order; False as
    soon as `take` returns False (a line not in its shape) or the file does not end whole."""
    try:
        for block in _whole_blocks(path):
            if not take(block.split(b"\n")):
                return False
    except _NotInShape:
        return False
    return True


def fold_answer_keys(path: Path, take: Callable[[Iterator[Key]], None]) -> bool:
    """Give `take` the ID keys of an answers file's lines (`answer_ids`' keys), a block's
    lines at a time, in file order; False as soon as a line is not in the shape. The lines
    are looked at where they lie in the blocks read: answers are long, a copy is not free."""
    with missing_is_empty(path):
        for line, block, start, last in read_blocks(path):
            if not block:
                return not line  # an unterminated last line goes to `scan_heads`
            ids = _answer_ids(line, 0, len(line)) if _is_utf8(line) else None
            if ids is None:
                return False
            if start <= last:
                if not (block.isascii() or _is_utf8(memoryview(block)[start:last])):
                    return False
                more = _answer_ids(block, start, last)
                if more is None:
                    return False
                ids += more
            take(map(hash, ids))
    return True


def _answer_ids(buffer: bytes, start: int, stop: int) -> list[bytes] | None:
    """The 32-hex IDs of the answer lines `buffer[start:stop]` (newline separated), as
    `fast_answer_id` takes them; None when one is not in its shape."""
    find, starts, ends = buffer.find, buffer.startswith, buffer.endswith
    ids: list[bytes] = []
    append = ids.append
    while True:
        end = find(b"\n", start, stop)
        if end < 0:
            end = stop
        if not (
            starts(b'{"id":"', start)
            and starts(b'","topic":"', start + 39)
            and ends(b"}}", start + 50, end)
        ):
            return None
        append(buffer[start + 7 : start + 39])
        if end >= stop:
            break
        start = end + 1
    return ids if not b"".join(ids).translate(None, b"0123456789abcdef") else None


def _is_utf8(data: bytes | memoryview) -> bool:
    try:
        codecs.utf_8_decode(data, "strict", True)
    except UnicodeDecodeError:
        return False
    return True


def fold_matches(
    path: Path, line: re.Pattern[bytes], take: Callable[[list[tuple[bytes, ...]]], None]
) -> bool:
    """Give `take` the groups of `line` in each line of `path`, a block's lines at a time, in
    file order; False (and `take` has seen only some blocks) as soon as a line is not matched
    whole. `line` begins with a newline, has no other, ends with `(?=\\n|\\Z)` and has two
    groups or more: a match then begins a line and ends it, so as many matches as lines is
    every line matched."""
    try:
        for block in _whole_blocks(path):
            found = line.findall(b"\n" + block)
            if len(found) != block.count(b"\n") + 1:
                return False
            take(found)
    except _NotInShape:
        return False
    return True
