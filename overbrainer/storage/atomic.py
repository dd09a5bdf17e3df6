"""Crash-safe whole-file writes: a temp file in the same directory, fsync, then rename."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, data: str | bytes = b"") -> None:
    """Replace `path` with `data` so a crash leaves either the old file or the new one."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    temp = path.with_name(f".{path.name}.tmp")
    with open(temp, "wb") as file:
        file.write(payload)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temp, path)
