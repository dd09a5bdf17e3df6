"""Crash-safe JSONL: tolerant reads, one-syscall appends that repair a torn tail, atomic rewrites.

A crash (even `kill -9`) in the middle of an append can leave at most one incomplete last line.
Reads skip it with a warning, and the next appender repairs it before writing: a tail that is
whole JSON only lost its newline and gets it back; anything else is cut off.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar, cast

from overbrainer.storage.atomic import write_atomic_chunks
from overbrainer.storage.collector import collector_paused
from overbrainer.storage.errors import NO_SPACE, DataError, DiskFull, InvalidRecord
from overbrainer.storage.lines import line_blocks

__all__ = [
    "Appender",
    "DataError",
    "Stamp",
    "file_stamp",
    "open_appender",
    "open_file_appender",
    "read_records",
    "read_records_at",
    "rewrite",
    "rewrite_from",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

_TAIL_CHUNK = 1 << 16
_WRITE_BATCH = 1024


@contextlib.contextmanager
def missing_is_empty(path: Path) -> Iterator[None]:
    """Around a read of `path`: a missing file ends the block quietly (it reads as empty), and
    any other OSError is `access_error`'s; our own errors (`DiskFull` is an OSError too) pass."""
    try:
        yield
    except FileNotFoundError:
        return
    except DataError:
        raise
    except OSError as error:
        raise access_error(path, error) from error


def access_error(path: Path, error: OSError) -> DataError:
    if error.errno in NO_SPACE:
        return DiskFull(path, error)
    return DataError(f"cannot access {path}", error.strerror or type(error).__name__)


def _split_lines(data: bytes) -> list[str | None]:
    """The lines of a block of whole lines as text; a line that is not UTF-8 becomes None."""
    try:
        return cast("list[str | None]", data.decode("utf-8").split("\n"))
    except UnicodeDecodeError:
        lines: list[str | None] = []
        for raw in data.split(b"\n"):
            try:
                lines.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                lines.append(None)
        return lines


def read_records(path: Path, parse: Callable[[str], T]) -> list[T]:
    """Every record of `path` (none when it is missing), each line parsed by `parse`.

    Blank lines are skipped. A complete line that `parse` refuses fails with
    `{path}:{line}: invalid record`; an incomplete last line (no newline) that does not parse
    is ignored with a warning, since a crash mid-append leaves exactly that. The file is read
    in blocks, so memory holds the records and one block, not the whole file twice.
    """
    return read_records_at(path, lambda line, _start, _length: parse(line))


def read_records_at(path: Path, parse: Callable[[str, int, int], T]) -> list[T]:
    """`read_records`, where `parse` also gets the line's byte offset and length in the file
    (newline excluded), so that a caller can copy the line later without keeping it."""
    records: list[T] = []
    append = records.append
    number = 0
    offset = 0
    torn = b""
    try:
        with collector_paused():
            for block, is_tail in line_blocks(path):
                if is_tail:
                    torn = block
                    break
                for line in _split_lines(block):
                    number += 1
                    if line is None:
                        raise InvalidRecord(f"{path}:{number}: invalid record", "not valid UTF-8")
                    start = offset
                    length = len(line) if line.isascii() else len(line.encode("utf-8"))
                    offset += length + 1
                    if not line or line.isspace():
                        continue
                    try:
                        append(parse(line, start, length))
                    except ValueError as error:
                        message = f"{path}:{number}: invalid record"
                        raise InvalidRecord(message, str(error)) from error
    except FileNotFoundError:
        return []
    except OSError as error:
        raise access_error(path, error) from error
    if torn.strip():
        try:
            append(parse(torn.decode("utf-8"), offset, len(torn)))
        except ValueError:
            log.warning("%s: ignoring an incomplete last line", path)
    return records


class Appender:
    """An open JSONL file that appends records straight to the OS, one `write` syscall each."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd

    def append(self, json_line: str) -> None:
        """Write one record (compact JSON, no newline) as one line, straight to the OS."""
        self.append_all((json_line,))

    def append_all(self, json_lines: Iterable[str]) -> None:
        """Write records as lines in a single `write`, so a crash keeps all of them or none."""
        lines = list(json_lines)
        if any("\n" in line for line in lines):
            raise ValueError("a record must fit on one line")
        data = "".join(line + "\n" for line in lines).encode("utf-8")
        try:
            written = os.write(self._fd, data)
            # A regular file takes the whole write unless the disk is full; finish it if not.
            while written < len(data):
                written += os.write(self._fd, data[written:])
        except OSError as error:
            raise access_error(self.path, error) from error

    def close(self) -> None:
        """Sync the file to disk and close it."""
        if self._fd < 0:
            return
        fd, self._fd = self._fd, -1
        try:
            os.fsync(fd)
        except OSError as error:
            raise access_error(self.path, error) from error
        finally:
            os.close(fd)


def _last_newline(fd: int, size: int) -> int:
    """The offset just past the file's last `\\n`, or 0 when it has none."""
    end = size
    while end > 0:
        start = max(0, end - _TAIL_CHUNK)
        chunk = os.pread(fd, end - start, start)
        index = chunk.rfind(b"\n")
        if index >= 0:
            return start + index + 1
        end = start
    return 0


def _is_whole_record(tail: bytes) -> bool:
    try:
        return isinstance(json.loads(tail.decode("utf-8")), dict)
    except (ValueError, RecursionError):
        return False


def _repair_tail(path: Path, fd: int, keep_torn: bool) -> None:
    """End a torn last line with a newline when it is whole JSON or `keep_torn`; else cut it."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    keep = _last_newline(fd, size)
    tail = os.pread(fd, size - keep, keep)
    if tail.strip() and _is_whole_record(tail):
        os.write(fd, b"\n")
        log.warning("%s: the last line only lacked its newline; added it", path)
    elif keep_torn:
        os.write(fd, b"\n")
        log.warning("%s: ended an incomplete last line left by an interrupted write", path)
    else:
        os.ftruncate(fd, keep)
        log.warning("%s: dropped an incomplete last line left by an interrupted write", path)


def open_file_appender(path: Path, keep_torn: bool = False) -> Appender:
    """Open `path` for appending (creating it and its directory), repairing a torn tail.

    A torn last line is cut off, unless it is whole JSON (only its newline was lost) or
    `keep_torn` says the file is never shortened (the history: its reader skips bad lines).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise access_error(path, error) from error
    try:
        _repair_tail(path, fd, keep_torn)
    except OSError as error:
        os.close(fd)
        raise access_error(path, error) from error
    return Appender(path, fd)


@contextlib.contextmanager
def open_appender(path: Path, keep_torn: bool = False) -> Iterator[Appender]:
    """`with open_appender(path) as out: out.append(record.to_json())`; closes (and syncs)."""
    appender = open_file_appender(path, keep_torn)
    try:
        yield appender
    finally:
        appender.close()


def rewrite(path: Path, lines: Iterable[str]) -> None:
    """Replace `path` with `lines` (a newline after each) atomically, as `write_atomic` does."""
    pending = iter(lines)
    # One encode and write per batch of lines: per line, both cost more than the bytes.
    batches = iter(lambda: list(itertools.islice(pending, _WRITE_BATCH)), [])
    _rewrite_bytes(path, ("\n".join([*batch, ""]).encode("utf-8") for batch in batches))


Stamp = tuple[int, int, int]
"""A file's inode, size and modification time: it changes when the file does."""


def file_stamp(path: Path) -> Stamp | None:
    """The stamp of `path` now, or None when it cannot be read."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


def rewrite_from(
    path: Path,
    source: Path,
    spans: Iterable[tuple[int, int]],
    stamp: Stamp | None,
    check: Callable[[], None] = lambda: None,
) -> None:
    """Replace `path` atomically with lines copied from `source`, each given by the byte
    offset and length `read_records_at` reported, a newline after each. `check` is called
    before each batch written; if it raises, `path` is left as it was.

    `stamp` is `file_stamp(source)` from before it was read: a source changed since (only a
    hand edit can do that under the project lock) fails rather than copy the wrong bytes.
    """
    spans = list(spans)
    if not spans:
        _rewrite_bytes(path, [])  # nothing to copy: the source may not even exist
        return
    changed = DataError(f"{source} changed while it was read")
    try:
        fd = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
        info = os.fstat(fd)
    except FileNotFoundError:
        raise changed from None
    except OSError as error:
        raise access_error(source, error) from error
    try:
        if (info.st_ino, info.st_size, info.st_mtime_ns) != stamp:
            raise changed

        def batches() -> Iterator[bytes]:
            chunk: list[bytes] = []
            for start, length in spans:
                line = os.pread(fd, length, start)
                if len(line) != length:
                    raise changed
                chunk += (line, b"\n")
                if len(chunk) >= 2 * _WRITE_BATCH:
                    check()
                    yield b"".join(chunk)
                    chunk.clear()
            check()
            yield b"".join(chunk)

        _rewrite_bytes(path, batches())
    finally:
        os.close(fd)


def _rewrite_bytes(path: Path, chunks: Iterable[bytes]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic_chunks(path, chunks)
    except OSError as error:
        raise access_error(Path(error.filename or path), error) from error
