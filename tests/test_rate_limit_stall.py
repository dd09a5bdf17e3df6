"""`answers` against a LiteLLM-style limit (no reset header, 429 past the limit): it goes on
after each window and says why and for how long it waits, through the real command."""

from __future__ import annotations

import json
from pathlib import Path

from overbrainer.devtools.stub_provider import open_stub
from tests.compare_support import JUDGE_PRICES, answered_compare, make_compare_project
from tests.litellm_limits import LiteLlmLimits
from tests.pipeline_support import make_project, overbrainer, read_examples, write_questions

RPM = 5
WINDOW = 6.0
"""Seconds of the stand-in's window, and of `adaptive_window_secs`: a short minute."""
QUESTIONS = 11
"""Three windows' worth: a 429 in the first, an empty window announced after the second."""


async def test_answers_waits_for_a_window_without_reset_and_says_so(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=16, pipeline=f"adaptive_window_secs = {WINDOW}")
    config = root / "overbrainer.toml"
    # The stand-in gives no reasoning: this test is about waiting, not about reasoning.
    config.write_text(config.read_text().replace("reasoning = true", "reasoning = false"))
    write_questions(root, QUESTIONS)
    events = tmp_path / "events.jsonl"
    limits = LiteLlmLimits(rpm=RPM, window=WINDOW)
    async with open_stub(limits) as stub:
        result = await overbrainer(
            root, "--events", str(events), "answers", url=stub.url, limit=20 * WINDOW
        )
    assert result.code == 0, result.stderr[-3000:]
    assert len(read_examples(root)) == QUESTIONS
    assert limits.answered == QUESTIONS
    assert limits.refused <= 3, result.stderr[-3000:]
    lines = result.stderr.splitlines()
    refused = [n for n, line in enumerate(lines) if "rate limited (429), resuming in" in line]
    empty = [
        n
        for n, line in enumerate(lines)
        if f"waiting for the provider's rate limit: 0 of {RPM} requests left, resuming in" in line
    ]
    assert refused and empty, result.stderr[-3000:]
    assert refused[0] < empty[-1]
    waits = [
        json.loads(line)
        for line in events.read_text().splitlines()
        if json.loads(line)["event"] == "rate_limit_wait"
    ]
    assert {wait["reason"] for wait in waits} == {"rate limited (429)", "window"}
    assert all(0 < wait["seconds"] <= WINDOW + 1 for wait in waits)
    # Never a burst into an empty window: at most RPM requests started in any window.
    per_window: dict[int, int] = {}
    for moment in limits.sent:
        per_window[int(moment // WINDOW)] = per_window.get(int(moment // WINDOW), 0) + 1
    assert max(per_window.values()) <= RPM + 1


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
