"""A third-party server run as a child process for a test: waited for, then stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

STOP_WITHIN = 15.0
"""Seconds a server has to end after SIGTERM before its group is killed."""


def wait_until_up(
    name: str,
    is_up: Callable[[], bool],
    process: subprocess.Popen[bytes],
    log: Path,
    within: float,
    poll: float,
) -> None:
    """Poll `is_up` until it holds; fail with the log's tail on exit or after `within` s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-4000:]
            raise RuntimeError(f"{name} exited ({process.returncode}):\n{tail}")
        if is_up():
            return
        time.sleep(poll)  # polling a child's readiness: there is no event to wait on
    tail = log.read_text(errors="replace")[-4000:]
    raise RuntimeError(f"{name} was not up within {within:.0f} s:\n{tail}")


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's process group, then SIGKILL it if it has not ended in time."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_WITHIN)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_WITHIN)
