"""Crash-safe whole-file writes: the one way this package replaces a file's content.

A temp file beside the target is written, flushed and fsynced, renamed over the target, and
the directory is fsynced so the rename itself survives a power loss. A crash at any point
leaves either the old file or the new one, never a mix; a failure removes the temp file.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterable
from pathlib import Path

from overbrainer.storage.errors import space_for


def write_atomic(path: Path, data: str | bytes = b"") -> None:
    """Replace `path` with `data` (text is written as UTF-8); OSError when it cannot be."""
    write_atomic_chunks(path, (data.encode("utf-8") if isinstance(data, str) else data,))


def write_atomic_chunks(path: Path, chunks: Iterable[bytes]) -> None:
    """Replace `path` with the concatenated `chunks`, produced while writing; OSError on failure.

    An exception raised by `chunks` itself leaves the old file and no temp file behind too.
    A full disk or quota is `DiskFull` naming `path` (the temp file is gone); another OSError
    without a file name gets the temp file's, so a message can say where it failed.
    """
    # A unique name: two processes saving the same file (a run's record) never share a temp.
    temp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    with space_for(path):
        try:
            with open(temp, "xb") as file:
                for chunk in chunks:
                    file.write(chunk)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, path)
        except BaseException as error:
            with contextlib.suppress(OSError):
                temp.unlink(missing_ok=True)
            if isinstance(error, OSError) and error.filename is None:
                error.filename = str(temp)
            raise
        sync_directory(path.parent)


def sync_directory(directory: Path) -> None:
    """Flush `directory`'s entries (a rename, a new file) to disk; OSError on failure."""
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
