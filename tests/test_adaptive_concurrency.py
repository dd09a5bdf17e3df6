"""Adaptive concurrency against a rate-limited stand-in provider: the answers stage in process on
a virtual clock (the budget's 40 s pass at once), and a short run of the real command."""

from __future__ import annotations

from pathlib import Path

import attrs
import trio
import trio.testing

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_rate_limit import RateLimited
from overbrainer.devtools.stub_script import Recorded, Reply
from tests.pipeline_support import (
    FIXED_CONCURRENCY,
    make_project,
    overbrainer,
    read_examples,
    write_questions,
)
from tests.stage_in_process import answer_in_process

QUESTIONS = 400
BUDGET = 20
WINDOW = 2.0
FLOOR = QUESTIONS / BUDGET * WINDOW  # the budget's minimum time: 40 s
LATENCY = 0.2


@attrs.define
class Timed:
    """A rate-limited stand-in's responder that notes when each request came."""

    limits: RateLimited
    moments: list[float] = attrs.Factory(list)

    def __call__(self, request: Recorded) -> Reply:
        self.moments.append(trio.current_time())
        return self.limits(request)

    def took(self) -> float:
        """From the first request to the last reply."""
        return self.moments[-1] + LATENCY - self.moments[0]


async def answer_all(root: Path) -> tuple[RateLimited, float, list[str]]:
    """The answers stage on every question against a fresh rate-limited stand-in, in this
    process (on the test's clock): the limits, the time its requests took and the
    concurrency changes."""
    timed = Timed(RateLimited(requests=BUDGET, window=WINDOW, latency=LATENCY))
    changes: list[str] = []
    async with open_stub(timed) as stub:
        await answer_in_process(
            root,
            stub.url,
            on_concurrency=lambda name, old, new, _: changes.append(f"{name} {old}->{new}"),
        )
    # Timed by the requests: autojump moves the clock on while the stage's file work runs
    # in threads, which real time would not.
    return timed.limits, timed.took(), changes


async def test_adaptive_follows_the_budget_and_fixed_concurrency_storms_it(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    adaptive_root = make_project(tmp_path / "adaptive", concurrency=64)
    write_questions(adaptive_root, QUESTIONS)
    limits, took, changes = await answer_all(adaptive_root)
    assert len(read_examples(adaptive_root)) == QUESTIONS
    assert limits.answered == QUESTIONS
    assert FLOOR - WINDOW <= took <= 1.15 * FLOOR, changes
    assert limits.refused < 0.05 * QUESTIONS
    assert changes and all(change.startswith("stub/") for change in changes)

    fixed_root = make_project(tmp_path / "fixed", concurrency=64, pipeline=FIXED_CONCURRENCY)
    write_questions(fixed_root, QUESTIONS)
    fixed, _, _ = await answer_all(fixed_root)
    assert fixed.refused > 5 * max(limits.refused, 1)


async def test_the_command_answers_within_the_budget_and_shows_the_limits_changes(
    tmp_path: Path,
) -> None:
    questions = 2 * BUDGET  # two windows: one limit change at least, in a few seconds
    root = make_project(tmp_path / "p", concurrency=64)
    write_questions(root, questions)
    limits = RateLimited(requests=BUDGET, window=WINDOW, latency=LATENCY)
    async with open_stub(limits) as stub:
        result = await overbrainer(root, "answers", url=stub.url, limit=30)
    assert result.code == 0, result.stderr[-2000:]
    assert len(read_examples(root)) == questions
    assert limits.answered == questions
    assert "concurrency: stub/" in result.stderr  # the limit's changes are shown as lines
