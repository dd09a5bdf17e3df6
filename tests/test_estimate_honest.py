"""Estimates a user can trust: a low end near what short answers really cost, the items that
will exist when a stage runs (not what the topics asked for), and no fake $0 without prices."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from overbrainer.devtools.stub_model import default_reply
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.events.types import Stage
from tests.pipeline_support import PRICES, history, make_project, overbrainer, write_questions
from tests.test_estimate import number, parse

MEASURED_FACTOR = 1.25
"""How far the low end may be from the real spend once the project has measured its answers."""

FLOOR_FACTOR = 2.5
"""How far above the real spend the floor may put the low end of a fresh project's answers:
the stand-in's answers are 60 tokens (the floor assumes 100) and it counts no system prompt
(the estimate does, at bytes / 3). Measured: $2.24 for $1.15 spent; the prior of 1,200 tokens
was 18 times the spend."""


def answers_spent(root: Path) -> float:
    """What the last `answers` stage of the project's history cost."""
    record = [h for h in history(root) if h.stage is Stage.ANSWERS][-1]
    assert record.cost is not None
    return record.cost


async def test_measured_short_answers_put_the_low_end_at_what_they_cost(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 4)
    async with open_stub() as stub:  # short answers: 60 tokens out each
        stub.models = PRICES
        first = await overbrainer(root, "answers", url=stub.url)
        assert first.code == 0, first.stderr
        write_questions(root, 16)  # the same four, and twelve more
        estimate = await overbrainer(root, "estimate", "answers", url=stub.url)
        assert estimate.code == 0, estimate.stderr
        line = parse(estimate.stdout)["answers"]
        result = await overbrainer(root, "answers", url=stub.url)
    assert result.code == 0, result.stderr
    assert (line["items"], line["basis"]) == ("12", "measured over 4 earlier answers")
    spent = answers_spent(root)
    low = number(line["low"])
    assert spent / MEASURED_FACTOR <= low <= spent * MEASURED_FACTOR, (low, spent)
    assert number(line["high"]) > 10 * spent  # still every reply at max_tokens


async def test_a_fresh_projects_low_end_is_a_floor_near_short_answers(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub:
        stub.models = PRICES
        estimate = await overbrainer(root, "estimate", url=stub.url)
        assert estimate.code == 0, estimate.stderr
        line = parse(estimate.stdout)["answers"]
        result = await overbrainer(root, "run", "--no-train", url=stub.url)
    assert result.code == 0, result.stderr
    assert line["basis"] == "no answers measured yet: at least 100 out each"
    spent = answers_spent(root)
    low = number(line["low"])
    assert spent <= low <= spent * FLOOR_FACTOR, (low, spent)


NAMES = ("Borrowing rules", "Lifetimes in structs")


def generator_that_repeats_itself() -> Callable[[Recorded], Reply]:
    """Two subtopics; for each, the same five questions every time it is asked for more."""
    asked: dict[str, list[str]] = {}

    def reply(request: Recorded) -> Reply:
        body = request.body_json if isinstance(request.body_json, dict) else {}
        prompt = request.prompt or ""
        if body.get("model") != "gen-model":
            return default_reply(request)
        if "question" not in prompt.lower():
            return Reply(content=json.dumps(list(NAMES)), usage=(50, 20))
        name = next(name for name in NAMES if name in prompt)
        if name not in asked:
            items = json.loads(default_reply(request).content)
            asked[name] = items[:5]
        return Reply(content=json.dumps(asked[name]), usage=(50, 60))

    return reply


async def test_run_estimates_the_answers_its_questions_stage_made(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    config = root / "overbrainer.toml"
    text = config.read_text()
    # One topic: 2 subtopics of 150 questions (300 answers planned); the generator stops at 5.
    text = text.replace("questions_per_subtopic = 2", "questions_per_subtopic = 150", 1)
    head, _, tail = text.partition('[[topics]]\nname = "async"\n')
    config.write_text(head + tail.split("\n", 2)[2])
    async with open_stub(generator_that_repeats_itself()) as stub:
        stub.models = PRICES
        before = await overbrainer(root, "estimate", url=stub.url)
        result = await overbrainer(root, "run", "--no-train", url=stub.url)
        after = await overbrainer(root, "estimate", url=stub.url)
    # Before anything ran: everything is planned by the topics.
    planned = parse(before.stdout)["answers"]
    assert (planned["items"], planned["present"], planned["planned"]) == ("300", "0", "300")
    assert result.code == 0, result.stderr
    assert "questions: 2 subtopics stopped short: 10 of 300 questions" in result.stderr
    # Before its answers, `run` counts the 10 questions its questions stage made (it said 300).
    [said] = [line for line in result.stderr.splitlines() if "estimate: answers:" in line]
    assert "estimate: answers: 10 to do (10 requests); " in said, said
    assert result.out_lines[2].startswith("answers: 10 done, 0 skipped, 0 failed")
    # Afterwards, a plain estimate says what another `run` would ask for: the rest, planned.
    rest = parse(after.stdout)
    assert rest["questions"]["items"] == "2"
    assert rest["questions"].get("planned") is None  # both subtopics are there: none planned
    assert (rest["answers"]["items"], rest["answers"]["present"]) == ("290", "0")
    assert rest["answers"]["planned"] == "290"


async def test_without_prices_the_cost_is_unknown_never_zero(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub:  # its listing has no prices, nor does the configuration
        result = await overbrainer(root, "estimate", url=stub.url)
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].endswith("; cost unknown (no price for gen-model)"), lines[0]
    assert lines[2].endswith("; cost unknown (no price for parent-model)"), lines[2]
    assert lines[-1] == "estimate: total cost unknown (no prices for gen-model, parent-model)"
    assert "$0.0000" not in result.stdout
