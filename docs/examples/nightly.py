#!/usr/bin/env python3
"""A nightly batch job for an overbrainer project: grow, train, export, compare, push.

    python nightly.py [--overbrainer CMD] PROJECT

Each step runs one `overbrainer` command with `--json`, reads its exit code first and then the
one JSON document on its stdout (docs/json.md, docs/exit-codes.md); the commands' logs go to
this script's stderr. The child is pushed only when its win-or-tie rate beats the best one so
far, kept in PROJECT/.nightly.json. One summary line per step on stdout.

Exit codes, as overbrainer's own: 0 done (pushed, or nothing better to push), 1 a step failed,
2 a configuration problem (the step refused to start), 130 interrupted (run it again: what
was stored stays).

Standard library only; copy it and change what your nights need.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from types import FrameType
from typing import Any

STATE_FILE = ".nightly.json"
TIME = "%Y-%m-%dT%H:%M:%SZ"


class Stop(Exception):
    """Ends the night with an exit code (and a line on stderr, unless interrupted)."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Overbrainer:
    """Runs `overbrainer -C PROJECT ... --json` commands one at a time, passing signals on."""

    def __init__(self, command: list[str], project: Path) -> None:
        self.command = command
        self.project = project
        self.child: subprocess.Popen[str] | None = None
        self.interrupted = False

    def forward(self, signum: int, _frame: FrameType | None) -> None:
        """Ctrl-C or SIGTERM: pass it on to the running command, which drains and exits 130."""
        self.interrupted = True
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(signum)

    def run(self, step: str, *args: str) -> dict[str, Any]:
        """The document of `overbrainer ARGS --json`; Stop on any exit code but 0."""
        if self.interrupted:
            raise Stop(130)
        argv = [*self.command, "-C", str(self.project), *args, "--json"]
        # A session of its own: a Ctrl-C on the terminal reaches this script only, and
        # `forward` passes exactly one on, so overbrainer drains instead of stopping at once.
        try:
            self.child = subprocess.Popen(
                argv, stdout=subprocess.PIPE, text=True, start_new_session=True
            )
        except OSError as cannot:
            raise Stop(2, f"{step}: cannot run {argv[0]}: {cannot.strerror}") from None
        try:
            out, _ = self.child.communicate()
        finally:
            code = self.child.wait()
            self.child = None
        try:
            document: dict[str, Any] = json.loads(out)
        except ValueError:
            # No document: the command line was refused before the command started (exit 2).
            document = {"error": f"no JSON document from `{shlex.join(argv)}`"}
        error = document.get("error") or f"exit code {code}"
        if code == 0:
            return document
        if code == 130 or self.interrupted:
            raise Stop(130)
        if code == 2:
            raise Stop(2, f"{step}: configuration problem: {error}")
        raise Stop(1, f"{step} failed: {error}")


def load_state(path: Path) -> dict[str, Any]:
    """The best child so far (`{}` before the first push)."""
    try:
        state: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return state


def save_state(path: Path, state: dict[str, Any]) -> None:
    """Write `state` atomically: a crash leaves the old file or the new one, never half of one."""
    fd, temp = tempfile.mkstemp(prefix=path.name, suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump(state, file, indent=2)
            file.write("\n")
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise


def money(value: str | None) -> str:
    """A cost from the document (an exact decimal string, or null) as `$0.0012`."""
    return "$?" if value is None else f"${Decimal(value):.4f}"


def grow(ob: Overbrainer) -> dict[str, int]:
    """Run the dataset stages (they resume: only what is missing is made); the split's sizes."""
    stages = ob.run("grow", "run", "--no-train")["stages"]
    made = sum(s["done"] for s in stages if s["stage"] != "split")
    cost = sum((Decimal(s["cost"]) for s in stages if s["cost"] is not None), Decimal(0))
    known = all(s["cost"] is not None for s in stages if s["done"])
    split: dict[str, int] = next(s["split"] for s in reversed(stages) if s["stage"] == "split")
    parts = ", ".join(f"{s['stage']} {s['done']}" for s in stages if s["stage"] != "split")
    print(
        f"grow: {made} new ({parts}); split {split['train']} train, {split['eval']} eval; "
        f"cost {money(str(cost)) if known else money(None)}",
        flush=True,
    )
    return {"train": split["train"], "eval": split["eval"]}


def push(ob: Overbrainer, state_path: Path, state: dict[str, Any], child: dict[str, Any]) -> None:
    """Push `child` (a run that beat the best), then make it the best.

    It is written down as `pending` first: a push that fails or is interrupted is tried again
    at the start of the next night, even when the dataset does not grow in between.
    """
    save_state(state_path, {**state, "pending": child})
    pushed = ob.run("push", "push", child["run_id"])["push"]
    print(f"push: {pushed['url']}", flush=True)
    best = {**child, "url": pushed["url"], "pushed_at": datetime.now(UTC).strftime(TIME)}
    save_state(state_path, {"best": best, "compared_split": state.get("compared_split")})


def night(ob: Overbrainer, state_path: Path) -> None:
    """One night's steps, in order; Stop ends it early."""
    state = load_state(state_path)
    if "pending" in state:
        print(f"push: run {state['pending']['run_id']} beat the best: pushing it again", flush=True)
        push(ob, state_path, state, state["pending"])
        state = load_state(state_path)

    split = grow(ob)
    if split == state.get("compared_split"):
        print("train: skipped: the dataset did not change since the last compare", flush=True)
        return

    trained = ob.run("train", "train")["train"]
    run_id = trained["run_id"]
    print(f"train: run {run_id} {trained['state']}", flush=True)

    exported = ob.run("export", "export", run_id)["export"]
    print(
        f"export: {exported['gguf']} ({exported['quantize']}, {exported['size_bytes']} bytes)",
        flush=True,
    )

    report = ob.run("compare", "compare", "--run", run_id)["compare"]
    rate = report["win_or_tie"]
    best = state.get("best")
    shown_best = "none" if best is None else f"{best['win_or_tie']:.3f} (run {best['run_id']})"
    print(
        f"compare: {report['compare_id']}: win-or-tie "
        f"{'n/a' if rate is None else format(rate, '.3f')} "
        f"({report['wins']} wins, {report['ties']} ties, {report['losses']} losses); "
        f"best so far {shown_best}",
        flush=True,
    )
    state = {**state, "compared_split": split}
    if rate is None or (best is not None and rate <= best["win_or_tie"]):
        save_state(state_path, state)
        print(f"push: skipped: run {run_id} does not beat the best", flush=True)
        return
    child = {"run_id": run_id, "compare_id": report["compare_id"], "win_or_tie": rate}
    push(ob, state_path, state, child)


def main() -> int:
    """Parse the arguments, run the night, map its end to an exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path, help="the project folder (overbrainer.toml)")
    parser.add_argument(
        "--overbrainer",
        default="overbrainer",
        help="how to run overbrainer (default: `overbrainer` on PATH)",
    )
    args = parser.parse_args()
    ob = Overbrainer(shlex.split(args.overbrainer), args.project)
    signal.signal(signal.SIGINT, ob.forward)
    signal.signal(signal.SIGTERM, ob.forward)
    try:
        night(ob, args.project / STATE_FILE)
    except Stop as stop:
        if stop.message:
            print(f"nightly: {stop.message}", file=sys.stderr, flush=True)
        return stop.code
    return 0


if __name__ == "__main__":
    sys.exit(main())
