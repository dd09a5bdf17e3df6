"""Crash-safe JSONL: the reference's read rules, torn-tail repair, one-write appends, rewrites."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from overbrainer.model.errors import EXIT_USAGE
from overbrainer.storage.jsonl import (
    DataError,
    file_stamp,
    open_appender,
    read_records,
    read_records_at,
    rewrite,
    rewrite_from,
)
from overbrainer.storage.records import Subtopic

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


def test_several_records_can_be_one_write_syscall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    calls: list[bytes] = []
    real_write = os.write

    def counting_write(fd: int, data: bytes) -> int:
        calls.append(bytes(data))
        return real_write(fd, data)

    with open_appender(path) as out:
        monkeypatch.setattr(os, "write", counting_write)
        out.append_all(record.to_json() for record in (A, B, C))
        with pytest.raises(ValueError):
            out.append_all([A.to_json(), '{"a":\n1}'])
    assert calls == [_line(A) + _line(B) + _line(C)]
    assert path.read_bytes() == calls[0]


@pytest.mark.parametrize("tail", [_line(B)[:-5], b"garbage"])
def test_an_appender_that_keeps_torn_lines_only_ends_them(tmp_path: Path, tail: bytes) -> None:
    path = _write(tmp_path / "s.jsonl", _line(A) + tail)
    with open_appender(path, keep_torn=True) as out:
        out.append(C.to_json())
    assert path.read_bytes() == _line(A) + tail + b"\n" + _line(C)


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
from overbrainer.storage.jsonl import open_appender
from overbrainer.storage.records import Subtopic
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

    with pytest.raises(DataError, match=r"^cannot access .*/train\.jsonl: No space left"):
        rewrite(path, failing())
    assert path.read_bytes() == _line(A)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.jsonl"]


def _spanned(path: Path) -> tuple[bytes, list[tuple[str, int, int]]]:
    return path.read_bytes(), read_records_at(path, lambda line, at, n: (line, at, n))


def test_each_record_comes_with_its_byte_offset_and_length(tmp_path: Path) -> None:
    text = '{"a":"é中😀"}\n\n  \n{"b":1}\r\n' + "x" * 10 + "\n" + '{"tail":"ü"}'
    data, spans = _spanned(_write(tmp_path / "f.jsonl", text.encode()))
    assert [line for line, _, _ in spans] == [
        '{"a":"é中😀"}',
        '{"b":1}\r',
        "x" * 10,
        '{"tail":"ü"}',
    ]
    assert [(at, n) for _, at, n in spans] == [(0, 17), (22, 8), (31, 10), (42, 13)]
    for line, at, n in spans:
        assert data[at : at + n] == line.encode()


def test_offsets_count_across_read_blocks(tmp_path: Path) -> None:
    lines = [f"{n} {'é' * (n % 7)} " + "y" * (n * 5003 % 70000) for n in range(300)]
    data, spans = _spanned(_write(tmp_path / "f.jsonl", "".join(x + "\n" for x in lines).encode()))
    assert [line for line, _, _ in spans] == lines
    assert all(data[at : at + n] == line.encode() for line, at, n in spans)


def test_rewrite_from_copies_the_lines_at_their_spans(tmp_path: Path) -> None:
    source = _write(tmp_path / "answers.jsonl", "one é\n\ntwo\r\nthree".encode())
    spans = read_records_at(source, lambda _line, at, n: (at, n))
    path = tmp_path / "data" / "train.jsonl"
    stamp = file_stamp(source)
    rewrite_from(path, source, [spans[2], spans[0], spans[1]] * 700, stamp)
    assert path.read_bytes() == "three\none é\ntwo\r\n".encode() * 700
    rewrite_from(path, tmp_path / "missing.jsonl", [], None)
    assert path.read_bytes() == b""
    assert sorted(p.name for p in path.parent.iterdir()) == ["train.jsonl"]


@pytest.mark.parametrize("edit", ["cut", "rewritten", "replaced", "removed"])
def test_rewrite_from_a_changed_source_fails_and_keeps_the_old_file(
    tmp_path: Path, edit: str
) -> None:
    source = _write(tmp_path / "answers.jsonl", b"one\ntwo\n")
    stamp = file_stamp(source)
    spans = read_records_at(source, lambda _line, at, n: (at, n))
    path = tmp_path / "train.jsonl"
    rewrite(path, ["old"])
    if edit == "cut":
        os.truncate(source, 4)
    elif edit == "rewritten":
        source.write_bytes(b"ONE\nTWO\n")
        os.utime(source, ns=(1, 1))
    elif edit == "replaced":
        _write(tmp_path / "new.jsonl", b"one\ntwo\n").replace(source)
    else:
        source.unlink()
    with pytest.raises(DataError, match=r"answers\.jsonl changed while it was read$"):
        rewrite_from(path, source, spans, stamp)
    assert path.read_bytes() == b"old\n"
    left = {"train.jsonl"} if edit == "removed" else {"answers.jsonl", "train.jsonl"}
    assert {p.name for p in tmp_path.iterdir()} == left


def test_rewrite_from_checks_the_length_of_each_copied_line(tmp_path: Path) -> None:
    source = _write(tmp_path / "answers.jsonl", b"one\ntwo\n")
    path = tmp_path / "train.jsonl"
    with pytest.raises(DataError, match=r"answers\.jsonl changed while it was read$"):
        rewrite_from(path, source, [(0, 3), (4, 9)], file_stamp(source))
    assert not path.exists()
    assert {p.name for p in tmp_path.iterdir()} == {"answers.jsonl"}
