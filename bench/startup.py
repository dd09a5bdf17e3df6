"""Start-up figures: `--version`, `--help`, `config check` and a stage with nothing to do.

The tests spawn the command some 300 times, and a user runs short commands all day, so its
start-up is paid over and over. Each command runs `RUNS` times as `python -m overbrainer` in a
fresh interpreter; the figures are the best and median wall time, the median CPU time (user +
system of the child, which a machine shared with other work disturbs less), and which of the
heavy libraries it imported. The stage is `answers` on an `init --demo` project whose
`run --no-train` has finished (the embedded stand-in provider: no network).

`--baseline DIR` runs the same commands from another source tree (e.g. one made with
`git archive <commit> overbrainer | tar -x -C DIR`) in turns with this one.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 10
HEAVY = ("trio", "httpx2", "rich", "urwid", "huggingface_hub", "paramiko", "prometheus_client")
LOADED = "import sys, runpy; sys.argv = ['overbrainer', *sys.argv[1:]]; " + (
    "code = 0\n"
    "try:\n"
    "    runpy.run_module('overbrainer', run_name='__main__')\n"
    "except SystemExit as exit:\n"
    "    code = exit.code\n"
    f"print(','.join(m for m in {HEAVY!r} if m in sys.modules) or '-', file=sys.stderr)"
)


def _cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _once(args: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    start, cpu = time.perf_counter(), _cpu_s()
    subprocess.run(
        [sys.executable, "-m", "overbrainer", *args],
        env=env,
        cwd=cwd,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start, _cpu_s() - cpu


def _heavy(args: list[str], env: dict[str, str], cwd: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", LOADED, *args], env=env, cwd=cwd, capture_output=True, text=True
    )
    return done.stderr.splitlines()[-1]


def _environ(tree: str | None) -> dict[str, str]:
    # Bytecode as an installed package has it: without it every start compiles our sources.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["NO_COLOR"] = "1"
    env["OVERBRAINER_NO_UPDATE_CHECK"] = "1"
    if tree is not None:
        env["PYTHONPATH"] = tree
    return env


def main() -> None:
    """Print the start-up figures of each command (and of the baseline's, in turns)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--baseline", metavar="DIR", help="another tree to time in turns")
    options = parser.parse_args()
    trees: dict[str, dict[str, str]] = {"this tree": _environ(None)}
    if options.baseline is not None:
        trees["baseline"] = _environ(str(Path(options.baseline).resolve()))
    # Run from an empty folder: `-m` and `-c` put the current directory first on sys.path.
    with tempfile.TemporaryDirectory() as folder:
        demo = Path(folder) / "demo"
        env = trees["this tree"]
        subprocess.run([sys.executable, "-m", "overbrainer", "init", "--demo", str(demo)],
                       env=env, cwd=folder, check=True, capture_output=True)  # fmt: skip
        subprocess.run([sys.executable, "-m", "overbrainer", "run", "--no-train"],
                       env=env, cwd=demo, check=True, capture_output=True)  # fmt: skip
        commands = {
            "--version": (["--version"], folder),
            "--help": (["--help"], folder),
            "config check": (["config", "check"], str(demo)),
            "answers (nothing to do)": (["answers"], str(demo)),
        }
        print(f"load average {os.getloadavg()[0]:.1f}, {options.runs} runs each")
        for name, (args, cwd) in commands.items():
            times: dict[str, list[tuple[float, float]]] = {tree: [] for tree in trees}
            for tree_env in trees.values():  # a first run writes the bytecode
                _once(args, tree_env, cwd)
            for _ in range(options.runs):
                for tree, tree_env in trees.items():
                    times[tree].append(_once(args, tree_env, cwd))
            for tree, tree_env in trees.items():
                walls = [wall for wall, _ in times[tree]]
                cpu = statistics.median(cpu for _, cpu in times[tree])
                print(
                    f"{tree:>9}: overbrainer {name}: best {min(walls) * 1000:.0f} ms, "
                    f"median {statistics.median(walls) * 1000:.0f} ms wall, "
                    f"median {cpu * 1000:.0f} ms CPU; heavy imports: {_heavy(args, tree_env, cwd)}"
                )
        print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
