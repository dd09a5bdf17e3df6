"""The realistic check of a rate limit stated without a reset: LiteLLM's proxy with `rpm: 30`.

A stand-in limited as LiteLLM limits a model (tests/litellm_limits.py: per-minute windows on
the clock, `x-ratelimit-limit-requests` and `-remaining-requests`, no reset header, a 429 past
the limit with `--enforce`) answers `overbrainer answers` on `--answers` questions at
`concurrency = 64` with the default 60 s window. Printed: the wall time, the windows it
spans, what was answered and refused, and the command's waiting lines. With the real window
this takes about a minute per `rpm` answers.

Run: `python bench/litellm_window.py [--answers 60] [--rpm 30] [--window 60] [--enforce]`.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import trio

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from overbrainer.devtools.stub_provider import open_stub  # noqa: E402
from tests.litellm_limits import LiteLlmLimits  # noqa: E402
from tests.pipeline_support import (  # noqa: E402
    make_project,
    overbrainer,
    read_examples,
    write_questions,
)


async def main(answers: int, rpm: int, window: float, enforce: bool) -> None:
    """Answer `answers` questions against the stand-in and print what happened."""
    with tempfile.TemporaryDirectory() as tmp:
        pipeline = "" if window == 60 else f"adaptive_window_secs = {window}"
        root = make_project(Path(tmp) / "p", concurrency=64, pipeline=pipeline)
        config = root / "overbrainer.toml"
        config.write_text(config.read_text().replace("reasoning = true", "reasoning = false"))
        write_questions(root, answers)
        limits = LiteLlmLimits(rpm=rpm, window=window, enforce=enforce)
        async with open_stub(limits) as stub:
            begun = trio.current_time()
            result = await overbrainer(root, "answers", url=stub.url, limit=20 * window + 60)
            took = trio.current_time() - begun
        written = len(read_examples(root))
    print(f"exit {result.code}: {written}/{answers} answers in {took:.1f} s")
    print(f"windows at least: {math.ceil(answers / rpm)} of {window:g} s")
    print(f"answered {limits.answered}, refused {limits.refused} (429)")
    for line in result.stderr.splitlines():
        if "rate limit" in line or "concurrency" in line or "finished" in line:
            print(line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=60)
    parser.add_argument("--rpm", type=int, default=30)
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--enforce", action="store_true")
    arguments = parser.parse_args()
    trio.run(main, arguments.answers, arguments.rpm, arguments.window, arguments.enforce)
