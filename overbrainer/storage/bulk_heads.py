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

from overbrainer.storage.errors import DataError
from overbrainer.storage.jsonl import access_error
from overbrainer.storage.lines import line_blocks

__all__ = ["fold_lines", "fold_matches"]


class _NotInShape(Exception):
    """A block with a line not in our writer's shape, or a file that does not end whole."""


def _whole_blocks(path: Path) -> Iterator[bytes]:
    """The blocks of whole lines of `path`, each UTF-8 (none when it is missing); raises
    `_NotInShape` for a block that is not UTF-8 or an unterminated last line."""
    try:
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
    except FileNotFoundError:
        return
    except DataError:
        raise
    except OSError as error:
        raise access_error(path, error) from error


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
