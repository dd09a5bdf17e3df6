"""`overbrainer system`: rows of this machine, JSON, and --watch stopped by a real Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from overbrainer.system.rows import pair, percent


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "overbrainer", *args]


def test_rows_show_disk_cpu_memory_and_gpus(tmp_path: Path) -> None:
    result = subprocess.run(
        command("-C", str(tmp_path), "system"), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    names = [line.split()[0] for line in result.stdout.splitlines()]
    assert names[0] == "disk"
    assert "cpu" in names and "mem" in names
    assert any(name.startswith("gpu") for name in names)


def test_json_is_one_sample_with_a_cpu_usage(tmp_path: Path) -> None:
    result = subprocess.run(
        command("-C", str(tmp_path), "system", "--json"), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    sample = json.loads(result.stdout)
    assert sample["disks"][0]["size_bytes"] > 0
    assert 0.0 <= sample["cpu"]["usage"] <= 1.0
    assert sample["memory"]["limit_bytes"] > sample["memory"]["used_bytes"] > 0


def test_watch_stops_on_ctrl_c_with_exit_130(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    watch = subprocess.Popen(
        command("-C", str(tmp_path), "system", "--watch"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert watch.stdout is not None
        assert watch.stdout.readline().startswith("disk")
        watch.send_signal(signal.SIGINT)
        _, err = watch.communicate(timeout=10)
    finally:
        watch.kill()
    assert watch.returncode == 130
    assert "Traceback" not in err


def test_figures_use_the_unit_of_the_total() -> None:
    assert pair(31 * 1024**3, 64 * 1024**3) == "31/64G"
    assert pair(512 * 1024**2, 8 * 1024**3) == "0.5/8.0G"
    assert percent(None) == "  --%"
    assert percent(0.853) == "  85%"
