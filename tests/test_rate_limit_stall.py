"""`answers` against a LiteLLM-style limit (no reset header, 429 past the limit): it goes on
after each window and says why and for how long it waits (in process on a virtual clock, and
through the real command on one short pause); `compare`'s judge announces its waits too."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import trio
import trio.testing

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.events.types import RateLimitWait
from overbrainer.llm.adaptive import ANNOUNCE_AFTER
from overbrainer.ui.progress import wait_words
from tests.compare_support import JUDGE_PRICES, answered_compare, make_compare_project
from tests.litellm_limits import LiteLlmLimits
from tests.pipeline_support import make_project, overbrainer, read_examples, write_questions
from tests.stage_in_process import answer_in_process

RPM = 5
WINDOW = 6.0
"""Seconds of the stand-in's window, and of `adaptive_window_secs`: a short minute."""
QUESTIONS = 11
"""Three windows' worth: a 429 in the first, an empty window announced after the second."""


def project_without_reasoning(root: Path, questions: int = QUESTIONS) -> Path:
    """A project whose `adaptive_window_secs` is the stand-in's window; the stand-in gives no
    reasoning: these tests are about waiting, not about reasoning."""
    root = make_project(root, concurrency=16, pipeline=f"adaptive_window_secs = {WINDOW}")
    config = root / "overbrainer.toml"
    config.write_text(config.read_text().replace("reasoning = true", "reasoning = false"))
    write_questions(root, questions)
    return root


async def test_answers_waits_for_a_window_without_reset_and_says_so(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    # In process, on a virtual clock: the three windows pass at once.
    root = project_without_reasoning(tmp_path / "p")
    limits = LiteLlmLimits(rpm=RPM, window=WINDOW)
    waits: list[RateLimitWait] = []
    async with open_stub(limits) as stub:
        outcome = await answer_in_process(root, stub.url, on_wait=waits.append)
    outcome.check()
    announced = [wait_words(wait) for wait in waits]
    assert len(read_examples(root)) == QUESTIONS
    assert limits.answered == QUESTIONS
    assert limits.refused <= 3, announced
    refused = [n for n, line in enumerate(announced) if "rate limited (429), resuming in" in line]
    empty = [
        n
        for n, line in enumerate(announced)
        if f"waiting for the provider's rate limit: 0 of {RPM} requests left, resuming in" in line
    ]
    assert refused and empty, announced
    assert refused[0] < empty[-1]
    assert {wait.reason for wait in waits} == {"rate limited (429)", "window"}
    assert all(0 < wait.seconds <= WINDOW + 1 for wait in waits)
    # Never a burst into an empty window: at most RPM requests started in any window.
    per_window: dict[int, int] = {}
    for moment in limits.sent:
        per_window[int(moment // WINDOW)] = per_window.get(int(moment // WINDOW), 0) + 1
    assert max(per_window.values()) <= RPM + 1


@attrs.define
class RefusesFirst:
    """A stand-in that refuses its first request with LiteLLM's 429, then answers."""

    seconds: float
    asked: int = 0

    def __call__(self, request: Recorded) -> Reply:
        self.asked += 1
        if self.asked == 1:
            return Reply(status=429, headers={"llm_provider-retry-after": f"{self.seconds:g}"})
        return Reply(content=f"Answer to {request.prompt}")


async def test_the_command_says_why_it_waits_on_its_lines_and_events(tmp_path: Path) -> None:
    # The real command on one pause long enough to be announced (the question behind the
    # refused probe waits out the rest of it): its line and its event.
    root = project_without_reasoning(tmp_path / "p", questions=2)
    events = tmp_path / "events.jsonl"
    pause = ANNOUNCE_AFTER + 1
    async with open_stub(RefusesFirst(pause)) as stub:
        result = await overbrainer(
            root, "--events", str(events), "answers", url=stub.url, limit=10 * pause
        )
    assert result.code == 0, result.stderr[-3000:]
    assert len(read_examples(root)) == 2
    waiting = "waiting for the provider's rate limit: rate limited (429), resuming in 4 s"
    assert any(
        line.endswith(f"stub/parent-model: {waiting}") for line in result.stderr.splitlines()
    ), result.stderr[-3000:]
    waits = [
        json.loads(line)
        for line in events.read_text().splitlines()
        if json.loads(line)["event"] == "rate_limit_wait"
    ]
    assert [wait["reason"] for wait in waits] == ["rate limited (429)"]
    assert ANNOUNCE_AFTER <= waits[0]["seconds"] <= pause


async def test_compares_judge_announces_its_waits_too(tmp_path: Path) -> None:
    # The judge of `compare` shares the pipeline's limiter and says why it waits, as answers do.
    root = make_compare_project(tmp_path / "p", concurrency=8, questions=4)
    compare_id = answered_compare(root)
    limits = LiteLlmLimits(rpm=RPM, window=WINDOW, enforce=False)
    env = {"OVERBRAINER_PIPELINE__ADAPTIVE_WINDOW_SECS": str(WINDOW)}
    async with open_stub(limits) as stub:
        stub.models = JUDGE_PRICES
        result = await overbrainer(
            root, "compare", "--rejudge", compare_id, url=stub.url, env=env, limit=20 * WINDOW
        )
    assert limits.answered > RPM, result.stderr[-3000:]  # more than one window's worth
    assert (
        f"judge-model: waiting for the provider's rate limit: 0 of {RPM} requests left"
        in result.stderr
    ), result.stderr[-3000:]
