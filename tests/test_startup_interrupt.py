"""A Ctrl-C while the command is still loading exits 130 with nothing on stderr."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.pipeline_support import make_project


def test_ctrl_c_during_start_up_exits_130_quietly(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    # A loopback URL, so a run that ends before its signal passes config check's pre-flight.
    clean["OVERBRAINER_PROVIDERS__STUB__BASE_URL"] = "http://127.0.0.1:9/v1"
    interrupted = 0
    # From the moment our code runs (Python's own start-up comes first) until the command ends.
    for delay in (0.12, 0.14, 0.17, 0.2, 0.24, 0.28, 0.33, 0.4, 0.5, 0.65, 0.8):
        child = subprocess.Popen(
            [sys.executable, "-m", "overbrainer", "-C", str(root), "config", "check"],
            env=clean,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(delay)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=30)
        if child.returncode == 0:  # it finished before the signal came
            continue
        if "init_import_site" in stderr:  # Python's own start-up, before any code of ours
            continue
        # -SIGINT: the signal came while Python was shutting down, after restoring the default
        # action; a shell sees 130 for that too.
        assert child.returncode in (130, -signal.SIGINT), (delay, child.returncode, stderr)
        assert stderr == "", (delay, stderr)
        interrupted += 1
    assert interrupted > 0, "every run ended before its Ctrl-C: the test proved nothing"
