"""The one atomic writer: whole replacement, fsyncs, no temp left behind, old file kept."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from overbrainer.storage.atomic import write_atomic, write_atomic_chunks
from overbrainer.storage.errors import DiskFull


def test_the_content_is_replaced_whole_and_no_temp_is_left(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    write_atomic(path, "first é\n")
    assert path.read_bytes() == "first é\n".encode()
    write_atomic(path, b"second")
    write_atomic_chunks(tmp_path / "chunks", (b"a", b"", b"bc"))
    assert path.read_bytes() == b"second"
    assert (tmp_path / "chunks").read_bytes() == b"abc"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chunks", "run.json"]


def test_the_file_the_directory_and_nothing_else_are_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    write_atomic(tmp_path / "f", "x")
    assert len(synced) == 2
    assert Path(synced[0]).name.startswith(".f.") and synced[0].endswith(".tmp")
    assert synced[1] == str(tmp_path)


def test_a_failing_write_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "train.jsonl"
    write_atomic(path, "old\n")

    def failing() -> Iterator[bytes]:
        yield b"new, half"
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left") as caught:
        write_atomic_chunks(path, failing())
    # A full disk names the file being replaced (the temp file is gone): one line for the user.
    assert isinstance(caught.value, DiskFull)
    assert caught.value.filename == str(path)
    assert caught.value.message == f"cannot access {path}: No space left on device"
    assert path.read_bytes() == b"old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.jsonl"]


def test_another_failing_write_names_the_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "train.jsonl"

    def failing() -> Iterator[bytes]:
        yield b"new, half"
        raise OSError(5, "Input/output error")

    with pytest.raises(OSError, match="Input/output") as caught:
        write_atomic_chunks(path, failing())
    assert not isinstance(caught.value, DiskFull)
    assert Path(str(caught.value.filename)).name.startswith(".train.jsonl.")


def test_any_error_while_producing_the_content_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "f"

    def failing() -> Iterator[bytes]:
        yield b"x"
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic_chunks(path, failing())
    assert list(tmp_path.iterdir()) == []


def test_a_failing_rename_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "inside").write_text("keep")
    with pytest.raises(OSError):
        write_atomic(target, "new")
    assert (target / "inside").read_text() == "keep"
    assert [p.name for p in tmp_path.iterdir()] == ["target"]


def test_a_missing_directory_is_an_error_not_created(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_atomic(tmp_path / "absent" / "f", "x")
    assert list(tmp_path.iterdir()) == []


_KILLED_WRITER = """
import os, sys
from pathlib import Path
from overbrainer.storage.atomic import write_atomic_chunks

def chunks():
    yield b"new, half written"
    os.kill(os.getpid(), 9)

write_atomic_chunks(Path(sys.argv[1]), chunks())
"""


def test_a_writer_killed_mid_write_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    write_atomic(path, "old\n")
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITER, str(path)], timeout=60, check=False
    )
    assert killed.returncode == -9
    assert path.read_bytes() == b"old\n"
