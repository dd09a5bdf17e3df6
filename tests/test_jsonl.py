"""Crash-safe JSONL: the reference's read rules, torn-tail repair, one-write appends, rewrites."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from overbrainer.dataset.jsonl import DataError, open_appender, read_records, rewrite
from overbrainer.dataset.records import Subtopic
from overbrainer.errors import EXIT_USAGE

A = Subtopic("a", "t", "Alpha")
B = Subtopic("b", "t", "Beta")
C = Subtopic("c", "t", "Gamma")
WARNING = "ignoring an incomplete last line"


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _line(record: Subtopic) -> bytes:
    return (record.to_json() + "\n").encode()


def test_a_missing_file_reads_as_empty(tmp_path: Path) -> None:
    assert read_records(tmp_path / "data" / "none.jsonl", Subtopic.from_json) == []


def test_records_read_in_order_and_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", _line(A) + b"\n   \n\t\r\n" + _line(B) + b"\n")
    assert read_records(path, Subtopic.from_json) == [A, B]


def test_a_bad_complete_line_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", _line(A) + b"\n" + b'{"id":"b"}\n' + _line(C))
    with pytest.raises(DataError) as caught:
        read_records(path, Subtopic.from_json)
    assert caught.value.message == f"{path}:3: invalid record: missing field `name` in subtopic"
    assert caught.value.exit_code == EXIT_USAGE


def test_a_complete_line_that_is_not_utf8_is_invalid(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", _line(A) + b'{"id":"\xff"}\n' + _line(B))
    with pytest.raises(DataError, match=r"s\.jsonl:2: invalid record: not valid UTF-8$"):
        read_records(path, Subtopic.from_json)


def test_an_unterminated_last_line_that_parses_is_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _write(tmp_path / "s.jsonl", _line(A) + _line(B)[:-1])
    assert read_records(path, Subtopic.from_json) == [A, B]
    assert WARNING not in caplog.text


@pytest.mark.parametrize(
    "tail",
    [_line(B)[:-5], b'{"id":"b","topic":"t","name":"\xe2\x82', b'{"id":"b"}', b"garbage"],
)
def test_an_incomplete_last_line_is_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, tail: bytes
) -> None:
    path = _write(tmp_path / "s.jsonl", _line(A) + tail)
    with caplog.at_level(logging.WARNING):
        assert read_records(path, Subtopic.from_json) == [A]
    assert [r.getMessage() for r in caplog.records] == [f"{path}: {WARNING}"]


def test_lines_longer_than_a_read_block_are_whole(tmp_path: Path) -> None:
    big = Subtopic("x", "t", "é" * 3_000_000)
    path = _write(tmp_path / "s.jsonl", _line(A) + _line(big) + _line(B) + _line(big)[:-1])
    assert read_records(path, Subtopic.from_json) == [A, big, B, big]


def test_line_numbers_count_across_read_blocks(tmp_path: Path) -> None:
    lines = [_line(Subtopic(str(i), "t", "n" * 150)) for i in range(60_000)]
    lines[54_321] = b"{}\n"
    path = _write(tmp_path / "s.jsonl", b"".join(lines))
    assert path.stat().st_size > 2 * (1 << 22)
    with pytest.raises(DataError, match=r":54322: invalid record"):
        read_records(path, Subtopic.from_json)


def test_an_unreadable_path_is_a_data_error(tmp_path: Path) -> None:
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(DataError, match=r"^cannot access .*dir\.jsonl: Is a directory$"):
        read_records(tmp_path / "dir.jsonl", Subtopic.from_json)


def test_the_appender_creates_the_directory_and_appends_lines(tmp_path: Path) -> None:
    path = tmp_path / "data" / "s.jsonl"
    with open_appender(path) as out:
        out.append(A.to_json())
        out.append(B.to_json())
        # Each record is on disk as soon as it is appended, before the close.
        assert path.read_bytes() == _line(A) + _line(B)
    with open_appender(path) as out:
        out.append(C.to_json())
    assert path.read_bytes() == _line(A) + _line(B) + _line(C)


def test_each_record_is_one_write_syscall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    calls: list[bytes] = []
    real_write = os.write

    def counting_write(fd: int, data: bytes) -> int:
        calls.append(bytes(data))
        return real_write(fd, data)

    with open_appender(path) as out:
        monkeypatch.setattr(os, "write", counting_write)
        out.append(A.to_json())
        out.append(B.to_json())
    assert calls == [_line(A), _line(B)]


def test_a_record_with_a_newline_is_refused(tmp_path: Path) -> None:
    with open_appender(tmp_path / "s.jsonl") as out, pytest.raises(ValueError):
        out.append('{"a":\n1}')


def test_opening_gives_a_whole_json_tail_its_newline(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", _line(A) + _line(B)[:-1])
    with open_appender(path) as out:
        out.append(C.to_json())
    assert path.read_bytes() == _line(A) + _line(B) + _line(C)


@pytest.mark.parametrize("tail", [_line(B)[:-5], b"\xe2\x82", b"[1,2]x", b"  "])
def test_opening_cuts_off_a_torn_tail(tmp_path: Path, tail: bytes) -> None:
    path = _write(tmp_path / "s.jsonl", _line(A) + tail)
    with open_appender(path) as out:
        out.append(C.to_json())
    assert path.read_bytes() == _line(A) + _line(C)


def test_opening_cuts_a_file_with_only_a_torn_line_to_nothing(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", b'{"id":"a"' + b"x" * 200_000)
    with open_appender(path):
        pass
    assert path.read_bytes() == b""


def test_a_torn_tail_longer_than_the_search_chunk_is_found(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", _line(A) + b'{"name":"' + b"y" * 300_000)
    with open_appender(path) as out:
        out.append(B.to_json())
    assert path.read_bytes() == _line(A) + _line(B)


_CRASHING_WRITER = """
import os, sys
from pathlib import Path
from overbrainer.dataset.jsonl import open_appender
from overbrainer.dataset.records import Subtopic
path = Path(sys.argv[1])
with open_appender(path) as out:
    out.append(Subtopic("a", "t", "Alpha").to_json())
    line = (Subtopic("b", "t", "Beta").to_json() + "\\n").encode()
    os.write(os.open(path, os.O_WRONLY | os.O_APPEND), line[: len(line) // 2])
    os.kill(os.getpid(), 9)
"""


def test_a_writer_killed_mid_line_loses_only_that_line(tmp_path: Path) -> None:
    path = tmp_path / "data" / "s.jsonl"
    crashed = subprocess.run(
        [sys.executable, "-c", _CRASHING_WRITER, str(path)], timeout=60, check=False
    )
    assert crashed.returncode == -9
    assert read_records(path, Subtopic.from_json) == [A]
    with open_appender(path) as out:
        out.append(C.to_json())
    assert read_records(path, Subtopic.from_json) == [A, C]
    assert path.read_bytes() == _line(A) + _line(C)


def test_an_appender_on_a_directory_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"^cannot access .*: Is a directory$"):
        open_appender(tmp_path).__enter__()


def test_rewrite_replaces_the_file_atomically(tmp_path: Path) -> None:
    path = tmp_path / "data" / "train.jsonl"
    rewrite(path, [A.to_json(), B.to_json()])
    assert path.read_bytes() == _line(A) + _line(B)
    rewrite(path, (record.to_json() for record in [C]))
    assert path.read_bytes() == _line(C)
    rewrite(path, [])
    assert path.read_bytes() == b""
    assert sorted(p.name for p in path.parent.iterdir()) == ["train.jsonl"]


def test_rewrite_writes_many_lines_in_order_across_write_batches(tmp_path: Path) -> None:
    path = tmp_path / "train.jsonl"
    lines = [Subtopic(str(n), "t", f"Name {n} é").to_json() for n in range(2500)]
    rewrite(path, iter(lines))
    assert path.read_bytes() == "".join(line + "\n" for line in lines).encode()


def test_a_failed_rewrite_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "train.jsonl"
    rewrite(path, [A.to_json()])

    def failing() -> Iterator[str]:
        yield B.to_json()
        raise OSError(28, "No space left on device")

    with pytest.raises(DataError, match=r"^cannot access .*\.train\.jsonl\.tmp: No space left"):
        rewrite(path, failing())
    assert path.read_bytes() == _line(A)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.jsonl"]
