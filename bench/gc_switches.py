"""What the two `gc` switches buy: the cycle collector paused around a bulk read, and the
objects that exist when a command starts frozen out of it.

Each figure runs in a fresh child process (same heap, same imports), the two variants taking
turns, `ROUNDS` times; the best CPU time of each is printed with the collections it ran.

- pause: `read_records` of 100,000 answers (whole `Example`s kept; only their IDs kept) with
  `storage/jsonl.py`'s pause of the cycle collector, and with it removed.
- freeze: after importing what a command imports, 100,000 answers handled one at a time
  (parsed and encoded, nothing kept, as a stage does) and 100,000 kept (a bulk read without
  the pause), with `gc.freeze()` first and without; and a whole command, `overbrainer split`
  over 100,000 and over 2,000 answers (their topics not configured: every answer read, none
  kept), whose process CPU from its start is measured with a `gc.freeze()` where
  `cli/running.py` made one before the command's `trio.run` (until this figure showed it buys
  nothing), and without.
"""

from __future__ import annotations

import contextlib
import gc
import io
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from records import ANSWERS, _answers  # bench/records.py: the same 100,000 answers

from overbrainer.project.init import init_project
from overbrainer.storage import jsonl
from overbrainer.storage import records as codec
from overbrainer.storage.jsonl import read_records, rewrite

ROUNDS = 5
FIGURES = {
    "bulk read, Example kept": ("read-whole", "pause", "no pause"),
    "resume read, IDs kept": ("read-ids", "pause", "no pause"),
    "per answer, nothing kept": ("per-answer", "frozen", "not frozen"),
    "bulk read without pause, kept": ("read-unpaused", "frozen", "not frozen"),
    "command (split), whole process": ("command", "frozen", "not frozen"),
    "command (split), 2,000 answers": ("command-small", "frozen", "not frozen"),
}
SMALL = 2_000


def _command_imports() -> None:
    """What a pipeline command has imported when its flow starts (the objects freeze moves)."""
    import overbrainer.cli.main
    import overbrainer.cli.stage_commands
    import overbrainer.flows.pipeline
    import overbrainer.flows.setup
    import overbrainer.ui.front  # noqa: F401


def child(work: str, variant: str, path: Path) -> None:
    """One measurement: prints CPU seconds and the collections run (young, middle, full)."""
    collections = [0, 0, 0]

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections[info["generation"]] += 1

    if work.startswith("command"):
        _command(variant, path, count, collections)
        return
    if work in ("per-answer", "read-unpaused"):
        _command_imports()
        if variant == "frozen":
            gc.freeze()
    if variant == "no pause" or work == "read-unpaused":
        jsonl.collector_paused = contextlib.nullcontext  # type: ignore[attr-defined,assignment]
    lines = path.read_text(encoding="utf-8").splitlines() if work == "per-answer" else []
    gc.collect()
    gc.callbacks.append(count)
    started = time.process_time()
    if work == "per-answer":
        for line in lines:
            codec.Example.from_json(line).to_json()
    elif work == "read-ids":
        read_records(path, codec.example_id)  # the list is kept while it is built
    else:
        read_records(path, codec.Example.from_json)
    elapsed = time.process_time() - started
    gc.callbacks.remove(count)
    print(elapsed, *collections)


def _command(
    variant: str, path: Path, count: Callable[[str, dict[str, int]], None], seen: list[int]
) -> None:
    """`overbrainer -C PROJECT split` in this process; its CPU since the process started."""
    import trio

    from overbrainer.cli.entry import main as command_line

    if variant == "frozen":  # where cli/running.py froze before: at the command's trio.run
        run = trio.run

        def frozen_run(*args: Any, **options: Any) -> Any:
            gc.freeze()
            return run(*args, **options)

        trio.run = frozen_run  # type: ignore[assignment]
    gc.callbacks.append(count)
    sys.argv = ["overbrainer", "-q", "-C", str(path.parent.parent), "split"]
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
        command_line()
    print(time.process_time(), *seen)


def _project(root: Path, count: int = ANSWERS) -> Path:
    """A project holding `count` of the answers; the path of its `data/answers.jsonl`."""
    init_project(root)
    path = root / "data" / "answers.jsonl"
    path.parent.mkdir(exist_ok=True)
    rewrite(path, (answer.to_json() for answer in _answers(codec)[:count]))
    return path


def _measure(work: str, variant: str, path: Path) -> tuple[float, list[int]]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", work, variant, str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), [int(n) for n in out[1:]]


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3], Path(sys.argv[4]))
        return
    with tempfile.TemporaryDirectory() as tmp:
        paths = {"": _project(Path(tmp) / "p"), "small": _project(Path(tmp) / "s", SMALL)}
        print(f"{ANSWERS:,} answers; best CPU of {ROUNDS} child processes each")
        for name, (work, *variants) in FIGURES.items():
            best = {v: (float("inf"), [0, 0, 0]) for v in variants}
            for _ in range(ROUNDS):
                for variant in variants:
                    path = paths["small" if work.endswith("-small") else ""]
                    seconds, collections = _measure(work, variant, path)
                    if seconds < best[variant][0]:
                        best[variant] = (seconds, collections)
            (a, (sa, ca)), (b, (sb, cb)) = best.items()
            print(
                f"{name:<31} {a}: {sa:5.2f} s (gc {ca[0]}/{ca[1]}/{ca[2]})"
                f"   {b}: {sb:5.2f} s (gc {cb[0]}/{cb[1]}/{cb[2]})   ratio {sb / sa:4.2f}"
            )


if __name__ == "__main__":
    main()
