"""A Ctrl-C while the command is still loading exits 130 with nothing on stderr."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.pipeline_support import make_project

PYTHON_START_UP = re.compile(r"init_import_site|Could not import runpy module")
"""What Python itself prints for a Ctrl-C during its own start-up, before `-m` runs our code."""
OUR_FRAME = re.compile(r'File "[^"]*/overbrainer/')


def before_our_code(stderr: str) -> bool:
    """Whether the Ctrl-C came before any code of ours ran: Python's own start-up, or runpy
    still looking for `overbrainer.__main__` (a traceback with no frame of ours)."""
    if PYTHON_START_UP.search(stderr):
        return True
    return stderr.startswith("Traceback") and OUR_FRAME.search(stderr) is None


def test_ctrl_c_during_start_up_exits_130_quietly(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    # A loopback URL, so a run that ends before its signal passes config check's pre-flight.
    clean["OVERBRAINER_PROVIDERS__STUB__BASE_URL"] = "http://127.0.0.1:9/v1"
    command = [sys.executable, "-m", "overbrainer", "-C", str(root), "config", "check"]
    # The sweep spans one whole run as long as it takes now: a busy machine stretches it.
    started = time.monotonic()
    subprocess.run(command, env=clean, capture_output=True, check=True, timeout=60)
    whole = time.monotonic() - started
    interrupted = 0
    # From the moment our code runs (Python's own start-up comes first) until the command ends.
    for share in (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95):
        child = subprocess.Popen(
            command, env=clean, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        time.sleep(share * whole)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=30)
        if child.returncode == 0:  # it finished before the signal came
            continue
        if before_our_code(stderr):
            continue
        # -SIGINT: the signal came while Python was shutting down, after restoring the default
        # action; a shell sees 130 for that too.
        assert child.returncode in (130, -signal.SIGINT), (share, child.returncode, stderr)
        assert stderr == "", (share, stderr)
        interrupted += 1
    assert interrupted > 0, "every run ended before its Ctrl-C: the test proved nothing"
