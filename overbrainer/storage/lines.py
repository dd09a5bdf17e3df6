"""A data file's lines looked at where they lie in the blocks read, with their file offsets.

The one block loop of the readers that look at a line's bytes before (or instead of) decoding
it: the resume heads (`scan_heads`) and the TUI's paged Dataset tree. A million lines cost a
second, not a minute: a line is copied only when it lies across two blocks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs

__all__ = ["BlockLines", "line_blocks", "read_blocks"]

_READ_BLOCK = 1 << 22


def read_blocks(path: Path) -> Iterator[tuple[bytes, bytes, int, int]]:
    """The one block loop of the data readers. For each block read that ends a line,
    `(line, block, start, last)`: `line` is the first line it ends (which the blocks before
    may have begun), a copy; `block[start:last]` its whole lines after that one, newline
    separated (none when `start > last`). Then, once, the unterminated last line (b"" when
    none) as `(tail, b"", 0, -1)`. Opening the file raises as `open` does."""
    with open(path, "rb") as file:
        carry = b""
        while block := file.read(_READ_BLOCK):
            first = block.find(b"\n")
            if first < 0:
                carry += block
                continue
            last = block.rfind(b"\n")
            yield carry + block[:first], block, first + 1, last
            carry = block[last + 1 :]
    yield carry, b"", 0, -1


def line_blocks(path: Path) -> Iterator[tuple[bytes, bool]]:
    """The file as blocks of whole lines, newline-separated without the last newline (False),
    then its unterminated last line (True, b"" when none). Opening raises as `open` does."""
    for line, block, start, last in read_blocks(path):
        if not block:
            yield line, True
        elif start > last:
            yield line, False
        else:
            yield line + block[start - 1 : last], False


@attrs.define
class BlockLines:
    """Each newline-ended line of `path` (blank ones too, so that lines can be numbered),
    newline excluded, as `(offset, buffer, start, end)`: the line is `buffer[start:end]` and
    begins at byte `offset` of the file. Whole lines of a block are looked at in that block
    (`start > 0`); each block's first line, which the block before may have begun, is a copy
    of its own (`start == 0`). Once iterated, `tail` is the unterminated last line (b"" when
    none) and `tail_offset` where it begins. Opening the file raises as `open` does."""

    path: Path
    tail: bytes = b""
    tail_offset: int = 0

    def __iter__(self) -> Iterator[tuple[int, bytes, int, int]]:
        offset = 0
        for line, block, first, last in read_blocks(self.path):
            if not block:
                self.tail, self.tail_offset = line, offset
                return
            yield offset, line, 0, len(line)
            offset += len(line) + 1
            start = first
            while start <= last:
                end = block.find(b"\n", start)
                yield offset + start - first, block, start, end
                start = end + 1
            offset += last + 1 - first if first <= last else 0
