"""A data file's lines looked at where they lie in the blocks read, with their file offsets.

The one block loop of the readers that look at a line's bytes before (or instead of) decoding
it: the resume heads (`scan_heads`) and the TUI's paged Dataset tree. A million lines cost a
second, not a minute: a line is copied only when it lies across two blocks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs

__all__ = ["BlockLines"]

_READ_BLOCK = 1 << 22


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
        with open(self.path, "rb") as file:
            base, carry = 0, b""
            while block := file.read(_READ_BLOCK):
                first = block.find(b"\n")
                if first < 0:
                    carry += block
                    base += len(block)
                    continue
                line = carry + block[:first]
                yield base - len(carry), line, 0, len(line)
                start, last = first + 1, block.rfind(b"\n")
                while start <= last:
                    end = block.find(b"\n", start)
                    yield base + start, block, start, end
                    start = end + 1
                carry = block[last + 1 :]
                base += len(block)
        self.tail, self.tail_offset = carry, base - len(carry)
