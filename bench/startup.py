"""Start-up figures: wall time of `overbrainer --version` and of `config check` on a demo project.

The tests spawn the command some 300 times, so its start-up is paid over and over. Each figure
is the median of `RUNS` runs of `python -m overbrainer`: wall time, and the child's CPU time
(user + system), which a machine shared with other work disturbs less; then whether rich was
imported.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 10
RICH_LOADED = "import sys, runpy; sys.argv = ['overbrainer', *sys.argv[1:]]; " + (
    "code = 0\n"
    "try:\n"
    "    runpy.run_module('overbrainer', run_name='__main__')\n"
    "except SystemExit as exit:\n"
    "    code = exit.code\n"
    "print('rich' in sys.modules, file=sys.stderr)"
)


def _cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _medians_s(args: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(RUNS):
        start, cpu = time.perf_counter(), _cpu_s()
        subprocess.run(
            [sys.executable, "-m", "overbrainer", *args],
            env=env,
            cwd=cwd,
            check=True,
            capture_output=True,
        )
        walls.append(time.perf_counter() - start)
        cpus.append(_cpu_s() - cpu)
    return sorted(walls)[len(walls) // 2], sorted(cpus)[len(cpus) // 2]


def _loads_rich(args: list[str], env: dict[str, str], cwd: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", RICH_LOADED, *args], env=env, cwd=cwd, capture_output=True, text=True
    )
    return done.stderr.splitlines()[-1]


def main() -> None:
    """Print the median start-up of each command."""
    env = {**os.environ, "NO_COLOR": "1"}
    # Run from an empty folder: `-m` and `-c` put the current directory first on sys.path.
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder) / "demo"
        subprocess.run(
            [sys.executable, "-m", "overbrainer", "init", "--demo", str(project)],
            env=env,
            check=True,
            capture_output=True,
        )
        for args in (["--version"], ["-C", str(project), "config", "check"]):
            wall, cpu = _medians_s(args, env, folder)
            shown = " ".join("DEMO" if a == str(project) else a for a in args)
            print(
                f"overbrainer {shown}: {wall * 1000:.0f} ms wall, {cpu * 1000:.0f} ms CPU "
                f"(medians of {RUNS}), rich imported: {_loads_rich(args, env, folder)}"
            )


if __name__ == "__main__":
    main()
