"""Big finished projects for the scale tests: built by `bench/_scale_build.py` once, cached.

`scale_project("100k")` builds (or reuses from `~/.cache/overbrainer/bench-scale/`, or
`$OVERBRAINER_BENCH_SCALE`) a finished project of 100,000 answers: 10 topics x 100 subtopics,
~600-character answers with ~1,200 characters of reasoning, a `[quality] judge` score each, on
the embedded stub. It is an input: `working_copy` gives a hard-link copy a command may run in.
`measured` runs a command to its end and returns its exit code, CPU time and peak RSS.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
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


LAUNCHER = """
import json, os, sys
pid = os.fork()
if pid == 0:
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(json.dumps([os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime,
                  usage.ru_maxrss * 1024]))
"""
"""Runs the command as its own child (its output dropped) and prints its exit code, CPU and
peak RSS.

Linux keeps the memory a process had before its `exec` in its peak RSS: a command forked
straight from a pytest worker that holds 140 MB would report at least 140 MB. Forked from
this small interpreter instead, the command's peak is its own (plus the launcher's ~10 MB).
"""


def measured(argv: list[str], env: dict[str, str], limit: float) -> Measured:
    """Run `argv` to its end (killed past `limit` seconds): its exit code, CPU and peak RSS."""
    launched = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = launched.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(launched.pid, signal.SIGKILL)
        launched.wait()
        raise TimeoutError(f"{argv[3:]} still running after {limit:.0f} s") from None
    code, cpu, peak = json.loads(out)
    return Measured(code, cpu, peak)
