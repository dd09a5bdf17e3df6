"""BlockLines: each line where it lies in the blocks read, at its offset in the file."""

from __future__ import annotations

import tempfile
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import given

from overbrainer.storage import lines as storage_lines
from overbrainer.storage.lines import BlockLines

LINE = st.binary(max_size=12).map(lambda b: b.replace(b"\n", b""))


@given(st.lists(LINE, max_size=12), LINE, st.integers(1, 20))
def test_every_line_and_the_tail_are_where_the_file_has_them(
    lines: list[bytes], tail: bytes, block: int
) -> None:
    content = b"".join(line + b"\n" for line in lines) + tail
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        patch.setattr(storage_lines, "_READ_BLOCK", block)  # lines across blocks, and in one
        path = Path(folder) / "data.jsonl"
        path.write_bytes(content)
        read = BlockLines(path)
        seen = []
        for offset, buffer, start, end in read:
            assert content[offset : offset + end - start] == buffer[start:end]
            seen.append(buffer[start:end])
    assert seen == lines  # blank lines too, so that lines can be numbered
    assert (read.tail, read.tail_offset) == (tail, len(content) - len(tail))


def test_a_missing_file_raises_as_open_does(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        list(BlockLines(tmp_path / "missing.jsonl"))
