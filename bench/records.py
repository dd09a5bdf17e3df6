"""Record codec figures: encode and decode 100,000 answers, time and peak memory.

`python bench/records.py --baseline REV` also measures `overbrainer/storage/records.py` as it
was at git revision REV (loaded from `git show`), and prints each figure's new ÷ old ratio.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from overbrainer.storage import records as current
from overbrainer.storage.ids import question_id, subtopic_id
from overbrainer.storage.jsonl import read_records, rewrite

ANSWERS = 100_000
ROUNDS = 5


def _answers(codec: ModuleType) -> list[Any]:
    """100,000 answers the size the stub provider writes (~610 bytes a line), 2% excluded."""
    out = []
    for i in range(ANSWERS):
        topic, name = f"topic {i % 10}", f"subtopic {i // 10 % 100}"
        text = f"What happens to a borrowed value when its owner moves, in case {i}?"
        messages = (
            codec.Message("user", text),
            codec.Message(
                "assistant",
                f"Here is a careful answer to: {text}",
                f"The user asks: {text} Let me reason about it step by step.",
            ),
        )
        excluded = codec.Exclusion.TRUNCATED if i % 50 == 0 else None
        meta = codec.Meta(
            "deepseek/deepseek-r1",
            41,
            812,
            codec.FinishReason.STOP,
            codec.ReasoningKind.RAW,
            excluded,
        )
        qid = question_id(subtopic_id(topic, name), text)
        out.append(codec.Example(qid, topic, name, messages, meta))
    return out


def _peak(run: Callable[[], object]) -> float:
    """The peak memory one run of `run` allocates (MB)."""
    gc.collect()
    tracemalloc.start()
    result = run()
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    del result
    return peak


def _seconds(run: Callable[[], object]) -> float:
    gc.collect()
    started = time.process_time()
    result = run()
    elapsed = time.process_time() - started
    del result
    return elapsed


def _runs(codec: ModuleType, path: Path) -> dict[str, Callable[[], object]]:
    answers = _answers(codec)
    lines = [answer.to_json() for answer in answers]
    return {
        "encode (to_json)": lambda: [answer.to_json() for answer in answers],
        "decode (Example.from_json)": lambda: list(map(codec.Example.from_json, lines)),
        "split read (example_head)": lambda: list(map(codec.example_head, lines)),
        "resume read of the file (example_id)": lambda: read_records(path, codec.example_id),
        "read of the file (Example.from_json)": lambda: read_records(path, codec.Example.from_json),
    }


def _figures(
    codecs: dict[str, ModuleType], path: Path
) -> dict[str, dict[str, tuple[float, float]]]:
    """Per figure and codec: best CPU time of `ROUNDS` (the codecs take turns, so a busy moment
    of a shared machine does not favour one) and peak memory."""
    runs = {name: _runs(codec, path) for name, codec in codecs.items()}
    figures: dict[str, dict[str, tuple[float, float]]] = {}
    for figure in runs["new"]:
        best = dict.fromkeys(runs, float("inf"))
        for _ in range(ROUNDS):
            for name in runs:
                best[name] = min(best[name], _seconds(runs[name][figure]))
        figures[figure] = {name: (best[name], _peak(runs[name][figure])) for name in runs}
    return figures


def _at_revision(revision: str) -> ModuleType:
    source = subprocess.run(
        ["git", "show", f"{revision}:overbrainer/storage/records.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    spec = importlib.util.spec_from_loader("records_baseline", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # attrs resolves the classes' annotations through it
    exec(compile(source, f"{revision}:records.py", "exec"), module.__dict__)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", help="a git revision to compare against")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "answers.jsonl"
        rewrite(path, (answer.to_json() for answer in _answers(current)))
        print(f"{ANSWERS:,} answers, {path.stat().st_size / 1e6:.0f} MB; best of {ROUNDS}")
        codecs = {"new": current}
        if options.baseline:
            codecs["old"] = _at_revision(options.baseline)
        figures = _figures(codecs, path)
    for name, by_codec in figures.items():
        seconds, peak = by_codec["new"]
        line = f"{name:<38} {seconds:6.3f} s  peak {peak:6.1f} MB"
        if "old" in by_codec:
            old_s, old_peak = by_codec["old"]
            line += (
                f"   was {old_s:6.3f} s  peak {old_peak:6.1f} MB"
                f"   ratio {seconds / old_s:4.2f} time, {peak / old_peak:4.2f} memory"
            )
        print(line)


if __name__ == "__main__":
    main()
