"""Adaptive concurrency against a rate-limited stand-in provider, through the real command."""

from __future__ import annotations

from pathlib import Path

import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_rate_limit import RateLimited
from tests.pipeline_support import (
    FIXED_CONCURRENCY,
    make_project,
    overbrainer,
    read_examples,
    write_questions,
)

QUESTIONS = 400
BUDGET = 20
WINDOW = 2.0
FLOOR = QUESTIONS / BUDGET * WINDOW  # the budget's minimum time: 40 s


async def answer_all(root: Path) -> tuple[RateLimited, float, str]:
    """`answers` on every question against a fresh rate-limited stand-in."""
    limits = RateLimited(requests=BUDGET, window=WINDOW, latency=0.2)
    async with open_stub(limits) as stub:
        begun = trio.current_time()
        result = await overbrainer(root, "answers", url=stub.url, limit=4 * FLOOR)
        took = trio.current_time() - begun
    return limits, took, result.stderr


async def test_adaptive_follows_the_budget_and_fixed_concurrency_storms_it(
    tmp_path: Path,
) -> None:
    adaptive_root = make_project(tmp_path / "adaptive", concurrency=64)
    write_questions(adaptive_root, QUESTIONS)
    limits, took, stderr = await answer_all(adaptive_root)
    assert len(read_examples(adaptive_root)) == QUESTIONS
    assert limits.answered == QUESTIONS
    assert took <= 1.15 * FLOOR, stderr[-2000:]
    assert limits.refused < 0.05 * QUESTIONS
    assert "concurrency: stub/" in stderr  # the limit's changes are shown as lines

    fixed_root = make_project(tmp_path / "fixed", concurrency=64, pipeline=FIXED_CONCURRENCY)
    write_questions(fixed_root, QUESTIONS)
    fixed, _, _ = await answer_all(fixed_root)
    assert fixed.refused > 5 * max(limits.refused, 1)
