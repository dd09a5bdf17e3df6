"""Each command's CPU time and peak RSS on finished projects of 10k and 100k answers (1M, 10M).

`python bench/scale.py [--sizes 10k,100k,1m] [--only answers,split] [--repeat N] [--warm]`
builds the projects once (`_scale_build.py`, cached outside the checkout), and runs each
command as a subprocess of the installed `overbrainer` on a hard-link copy of the project (the
state directory and every file the command appends to are real copies; a command that
touched the cache would stop the bench). Per command and size it prints the child's CPU time
(user + sys, from `os.wait4`) and peak RSS (`ru_maxrss`), and the growth per 1,000 answers
between the two largest sizes, as a markdown table. The TUI's start is measured in a tmux
terminal: from launch to the first screen showing the project's counts, its CPU and peak RSS
then. A run past `--limit` CPU seconds (default 120, so that `nox -s bench` ends in minutes
where a command is superlinear) or `--max-rss` GB is killed and shown as such.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import psutil
from _scale_build import SIZES, cache_root, ensure_project, parse_size, topic_names
from _synthetic import question

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# The copy the slow tests make too.
from tests.scale_support import working_copy

NAMES = {"10k": "10k", "100k": "100k", "1m": "1M", "10m": "10M"}
MB = 1e6


@attrs.frozen
class Figure:
    """One measured run: CPU seconds, peak RSS in bytes, exit status (None when killed)."""

    cpu_s: float
    rss: int
    code: int | None
    note: str = ""

    def cell(self) -> str:
        """The table cell."""
        text = f"{self.cpu_s:.1f} s, {self.rss / MB:.0f} MB"
        if self.code is None:
            return f"> {text} ({self.note})"
        if self.code != 0:
            return f"{text} (exit {self.code})"
        return f"{text}, {self.note}" if self.note else text


@attrs.frozen
class Command:
    """A command measured: its arguments (given the work folder) and the files it appends to."""

    name: str
    key: str
    args: Callable[[Path], list[str]]
    appends: tuple[str, ...] = ()


def _import_file(count: int) -> Callable[[Path], list[str]]:
    def args(work: Path) -> list[str]:
        path = work / f"import-{count}.jsonl"
        if not path.exists():
            _write_questions(path, count)
        return ["import", "questions", str(path)]

    return args


def _write_questions(path: Path, count: int) -> None:
    """`count` new synthetic questions spread over the projects' topics, as an import file."""
    rng = random.Random(count)
    topics = topic_names()
    with path.open("w", encoding="utf-8") as out:
        for n in range(count):
            row = {"question": question(rng), "topic": topics[n % len(topics)]}
            out.write(json.dumps(row) + "\n")


COMMANDS = (
    Command("`answers` with nothing to do", "answers", lambda _: ["answers"]),
    Command("`quality` with nothing to do", "quality", lambda _: ["quality"]),
    Command("`questions` with nothing to do", "questions", lambda _: ["questions"]),
    Command("`split`", "split", lambda _: ["split"]),
    Command(
        "`import questions`, 1,000 lines",
        "import1k",
        _import_file(1_000),
        ("questions", "subtopics", "imported"),
    ),
    Command(
        "`import questions`, 100,000 lines",
        "import100k",
        _import_file(100_000),
        ("questions", "subtopics", "imported"),
    ),
)
TUI = "tui"
TUI_NAME = "TUI start (first full screen)"
KEYS = [command.key for command in COMMANDS] + [TUI]


def overbrainer() -> str:
    """The `overbrainer` installed beside this Python (the checkout's venv), else on PATH."""
    beside = Path(sys.executable).parent / "overbrainer"
    return str(beside) if beside.exists() else shutil.which("overbrainer") or "overbrainer"


def environment() -> dict[str, str]:
    """The children's environment: no colour, no stray provider settings."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    return {**kept, "NO_COLOR": "1"}


def fingerprint(root: Path) -> dict[str, tuple[int, int]]:
    """Size and modification time of every file of `root`: the cache must not change."""
    out = {}
    for path in root.rglob("*"):
        if path.is_file():
            stat = path.stat()
            out[str(path)] = (stat.st_size, stat.st_mtime_ns)
    return out


def measure(argv: list[str], limit: float, max_rss: int) -> Figure:
    """Run `argv` to its end (or kill it past `limit` CPU seconds, four times that in wall
    time, or `max_rss` bytes): its CPU time and peak RSS."""
    with tempfile.TemporaryFile() as output:
        child = subprocess.Popen(argv, stdout=output, stderr=output, env=environment())
        started = time.monotonic()
        note = ""
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            cpu, rss = _usage(child.pid)
            note = _past(cpu, rss, time.monotonic() - started, limit, max_rss)
            if note:
                child.kill()
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.05)
        child.returncode = os.waitstatus_to_exitcode(status)
        code = None if note else child.returncode
        if code not in (0, None):
            output.seek(0)
            tail = output.read().decode(errors="replace").strip().splitlines()[-3:]
            print(f"  {argv[3:]} exited {code}: {' | '.join(tail)}", file=sys.stderr)
    return Figure(usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, code, note)


def _past(cpu: float, rss: int, wall: float, limit: float, max_rss: int) -> str:
    """Which limit a running child is past ("" when none): the reason it is killed."""
    if cpu > limit:
        return f"killed past {limit:.0f} s CPU"
    if rss > max_rss:
        return f"killed past {max_rss / 1e9:.1f} GB"
    if wall > 4 * limit:
        return f"killed past {4 * limit:.0f} s wall"
    return ""


def _usage(pid: int) -> tuple[float, int]:
    """The running child's CPU seconds and resident bytes (0 once it is gone)."""
    try:
        process = psutil.Process(pid)
        cpu = process.cpu_times()
        return cpu.user + cpu.system, int(process.memory_info().rss)
    except psutil.Error:
        return 0.0, 0


def measure_tui(root: Path, answers: int, limit: float, max_rss: int) -> Figure:
    """The TUI in a tmux terminal: CPU and peak RSS when its first screen shows the counts."""
    folder = Path(tempfile.mkdtemp(prefix="ob-scale-"))
    socket = str(folder / "socket")
    tmux = ["tmux", "-S", socket, "-f", os.devnull]
    line = f"exec {overbrainer()} -C {root} tui"
    env = {**environment(), "SHELL": "/bin/sh"}
    env.pop("TMUX", None)
    shown = re.compile(rf"answers\s+{answers}\b")
    try:
        new = [*tmux, "new-session", "-d", "-s", "main", "-x", "100", "-y", "30", line]
        started = time.monotonic()
        subprocess.run(new, check=True, env=env)
        pane = subprocess.run(
            [*tmux, "display", "-p", "-t", "main", "#{pane_pid}"],
            check=True,
            capture_output=True,
            text=True,
        )
        process = psutil.Process(int(pane.stdout))
        note = ""
        while not note:
            screen = subprocess.run(
                [*tmux, "capture-pane", "-p", "-t", "main"], capture_output=True, text=True
            ).stdout
            elapsed = time.monotonic() - started
            cpu, rss = _usage(process.pid)
            if shown.search(screen):
                note = f"{elapsed:.1f} s to screen"
            elif not process.is_running():
                return Figure(0.0, 0, 1, "exited before its screen")
            elif past := _past(cpu, rss, elapsed, limit, max_rss):
                note = f"{past}, no screen"
            time.sleep(0.05)
        code = 0 if note.endswith("to screen") else None
        return Figure(cpu, _peak_rss(process.pid), code, note)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def _peak_rss(pid: int) -> int:
    """The process's peak resident set (VmHWM) in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def run_size(size: str, keys: list[str], args: argparse.Namespace) -> dict[str, Figure]:
    """Every selected command on the project of `size`: its best of `--repeat` runs."""
    source = ensure_project(size)
    before = fingerprint(source)
    work_root = Path(tempfile.mkdtemp(prefix="bench-scale-work-", dir=cache_root().parent))
    figures: dict[str, Figure] = {}
    try:
        for command in [c for c in COMMANDS if c.key in keys]:
            runs = []
            for n in range(args.repeat):
                copy = work_root / f"{command.key}-{n}"
                working_copy(source, copy, command.appends)
                argv = [overbrainer(), "-C", str(copy), *command.args(work_root)]
                if args.warm:
                    measure(argv, args.limit, args.max_rss)
                runs.append(measure(argv, args.limit, args.max_rss))
                shutil.rmtree(copy)
            figures[command.key] = min(runs, key=lambda f: (f.code is None, f.cpu_s))
            print(f"  {NAMES[size]} {command.key}: {figures[command.key].cell()}", flush=True)
        if TUI in keys:
            copy = work_root / TUI
            working_copy(source, copy, ())
            figures[TUI] = measure_tui(copy, SIZES[size], args.limit, args.max_rss)
            print(f"  {NAMES[size]} tui: {figures[TUI].cell()}", flush=True)
    finally:
        shutil.rmtree(work_root, ignore_errors=True)
    if fingerprint(source) != before:
        sys.exit(f"error: a command changed the cached project {source}: rebuild it")
    return figures


def growth(sizes: list[str], row: dict[str, Figure]) -> str:
    """CPU and RSS per 1,000 answers between the two largest sizes measured (killed: none)."""
    done = [size for size in sizes if size in row and row[size].code is not None]
    if len(done) < 2:
        return "—"
    small, big = done[-2], done[-1]
    per = (SIZES[big] - SIZES[small]) / 1000
    cpu = (row[big].cpu_s - row[small].cpu_s) / per * 1000
    rss = (row[big].rss - row[small].rss) / per / MB
    return f"{cpu:.1f} ms, {rss:.2f} MB ({NAMES[small]}→{NAMES[big]})"


def table(sizes: list[str], figures: dict[str, dict[str, Figure]], keys: list[str]) -> str:
    """The markdown table: one row per command, one column per size, and the growth."""
    names = {command.key: command.name for command in COMMANDS} | {TUI: TUI_NAME}
    head = ["command", *(NAMES[size] for size in sizes), "per 1k answers"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in keys:
        row = {size: figures[size][key] for size in sizes if key in figures[size]}
        cells = [row[size].cell() if size in row else "—" for size in sizes]
        lines.append(f"| {names[key]} | " + " | ".join([*cells, growth(sizes, row)]) + " |")
    return "\n".join(lines)


def main() -> None:
    """Measure, then print the table (and `--json` the raw figures)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10k,100k", help="of 10k,100k,1m,10m")
    parser.add_argument("--only", default=",".join(KEYS), help=f"of {','.join(KEYS)}")
    parser.add_argument("--repeat", type=int, default=1, help="runs per figure, best kept")
    parser.add_argument("--warm", action="store_true", help="run each command once before")
    parser.add_argument("--limit", type=float, default=120, help="CPU seconds before a kill")
    parser.add_argument("--max-rss", type=float, default=6, help="GB before a kill")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    args.max_rss = int(args.max_rss * 1e9)
    try:
        sizes = sorted({parse_size(s) for s in args.sizes.split(",")}, key=SIZES.__getitem__)
    except ValueError as error:
        sys.exit(f"error: {error}")
    keys = [key for key in KEYS if key in args.only.split(",")]
    figures: dict[str, dict[str, Figure]] = {}
    for size in sizes:
        print(f"{NAMES[size]}: {ensure_project(size)}", flush=True)
        figures[size] = run_size(size, keys, args)
    print()
    print(table(sizes, figures, keys))
    if args.json:
        raw = {s: {k: attrs.asdict(f) for k, f in row.items()} for s, row in figures.items()}
        args.json.write_text(json.dumps(raw, indent=1) + "\n")


if __name__ == "__main__":
    main()
