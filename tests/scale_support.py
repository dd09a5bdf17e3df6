"""Big finished projects for the scale tests: built by `bench/_scale_build.py` once, cached.

`scale_project("100k")` builds (or reuses from `~/.cache/overbrainer/bench-scale/`, or
`$OVERBRAINER_BENCH_SCALE`) a finished project of 100,000 answers: 10 topics x 100 subtopics,
~600-character answers with ~1,200 characters of reasoning, a `[quality] judge` score each, on
the embedded stub. It is an input: `working_copy` gives a hard-link copy a command may run in.
`measured` runs a command to its end and returns its exit code, CPU time and peak RSS.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import attrs

BUILDER = Path(__file__).parents[1] / "bench" / "_scale_build.py"
BUILD_LIMIT = 600.0
"""Seconds a build may take on a loaded machine (100k: ~5 s CPU, ~8 s wall when idle)."""


def scale_project(size: str = "100k") -> Path:
    """The cached finished project of `size` answers (`10k`, `100k`, `1m`), built if missing."""
    built = subprocess.run(
        [sys.executable, str(BUILDER), size],
        check=True,
        capture_output=True,
        text=True,
        timeout=BUILD_LIMIT,
    )
    return Path(built.stdout.strip().splitlines()[-1])


def working_copy(source: Path, target: Path, appends: tuple[str, ...] = ()) -> Path:
    """A hard-link copy of `source` at `target` that a command may run in: its state folder
    and the data files named in `appends` (which a command appends to) are real copies."""
    linked = subprocess.run(["cp", "-al", str(source), str(target)], capture_output=True)
    if linked.returncode != 0:  # another file system (no hard links): a real copy
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target)
    shutil.rmtree(target / ".overbrainer")
    shutil.copytree(source / ".overbrainer", target / ".overbrainer")
    for name in appends:
        path = target / "data" / f"{name}.jsonl"
        if path.exists():
            path.unlink()
            shutil.copyfile(source / "data" / f"{name}.jsonl", path)
    return target


@attrs.frozen
class Measured:
    """A finished command: exit code, CPU seconds (user + sys), peak RSS in bytes."""

    code: int
    cpu_s: float
    peak_rss: int


def measured(argv: list[str], env: dict[str, str], limit: float) -> Measured:
    """Run `argv` to its end (killed past `limit` seconds): its exit code, CPU and peak RSS."""
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + limit
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            child.kill()
            os.wait4(child.pid, 0)
            raise TimeoutError(f"{argv[3:]} still running after {limit:.0f} s")
        # A child process's end has no event to wait on here: poll it.
        time.sleep(0.05)
    child.returncode = os.waitstatus_to_exitcode(status)
    return Measured(child.returncode, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024)
