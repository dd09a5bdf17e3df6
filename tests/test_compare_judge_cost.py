"""The judge's money: its requests held to the spend cap, counted in the report and recorded
as a `judge` line of the history (`compare --rejudge` of an answered compare, no job run)."""

from __future__ import annotations

import json
import os
import re
import signal
from fractions import Fraction
from pathlib import Path

import pytest
import trio

from overbrainer.compare.finish import load_setup
from overbrainer.compare.reasoning import strip_reasoning
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.events.types import Stage
from overbrainer.llm.types import CompletionRequest
from overbrainer.model.usage import Price, Usage
from overbrainer.pipeline.spend import (
    estimate_tokens,
    exact_cost,
    unreadable_usage,
    usd,
    worst_usage,
)
from overbrainer.project.templates import parse_template, template_source
from overbrainer.storage.history import HistoryStatus, format_history
from tests.compare_support import (
    JUDGE_PRICES,
    RUN_ID,
    SCRIPTED,
    answered_compare,
    make_compare_project,
    question_number,
    scripted_judge,
)
from tests.pipeline_support import history, overbrainer, start, wait_until
from tests.test_spend_cap import request_of

JUDGE_PRICE = Price(10.0, 20.0)
EACH = exact_cost(Usage(50, 10), JUDGE_PRICE)
"""What one scripted judge reply (50 in, 10 out) costs: $0.0007."""

CAPPED = re.compile(
    r"error: spend cap reached: \$(\S+) of \$(\S+) \(the next request could cost up to "
    r"\$(\S+)\); the verdicts so far are kept; resume with "
    r"`overbrainer compare --rejudge (\S+)`"
)


def _folder(root: Path, compare_id: str) -> Path:
    return root / "runs" / RUN_ID / "compares" / compare_id


def _verdict_ids(folder: Path) -> list[str]:
    files = list(folder.glob("verdicts-*.jsonl"))
    if not files:
        return []
    return [json.loads(x)["id"] for x in files[0].read_text().splitlines()]


def _judged(requests: list[Recorded]) -> list[int]:
    return sorted(question_number(r) for r in requests if r.is_completion)


def _worst(root: Path, compare_id: str) -> Fraction:
    """The worst case of one judge request: every question's prompt has the same length here."""
    setup = load_setup(_folder(root, compare_id))
    template = parse_template("judge.txt", template_source(root / "prompts", "judge.txt"))
    question = setup.questions[0]
    prompt = template.render(
        question=question.question,
        answer_a=strip_reasoning("Child answer 0."),
        answer_b=question.parent,
    )
    return exact_cost(worst_usage(CompletionRequest(prompt, max_tokens=256)), JUDGE_PRICE)


async def test_the_judging_is_recorded_in_the_history_and_the_report(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p")
    compare_id = answered_compare(root)
    async with open_stub(scripted_judge) as stub:
        stub.models = JUDGE_PRICES
        result = await overbrainer(root, "compare", "--rejudge", compare_id, url=stub.url)
        assert result.code == 0, result.stderr
        assert _judged(stub.requests) == [0, 1, 2, 3, 3, 4]
    cost = float(6 * EACH)
    assert cost == pytest.approx(0.0042)
    [line] = history(root)
    assert (line.stage, line.status, line.provider, line.model) == (
        Stage.JUDGE,
        HistoryStatus.OK,
        "stub",
        "judge-model",
    )
    assert (line.done, line.skipped, line.failed) == (5, 0, 0)
    assert (line.input_tokens, line.output_tokens) == (300, 60)
    assert line.cost == pytest.approx(cost)
    assert line.reason is None and not line.cost_estimated
    assert "compare: judge: 5 done, 0 skipped, 0 failed, 0 excluded; tokens 300 in, 60 out; " in (
        result.stderr
    )

    folder = _folder(root, compare_id)
    report = json.loads((folder / "compare.json").read_text())
    usage = report["judge_usage"]
    assert usage == {
        "input_tokens": 300,
        "output_tokens": 60,
        "cost": pytest.approx(cost),
        "estimated": False,
        "earlier_verdicts": 0,
    }
    md = (folder / "compare.md").read_text()
    assert "| Judge tokens and cost (this command) | 300 in, 60 out; $0.0042 |" in md

    shown = await overbrainer(root, "history", url=stub.url)
    assert shown.code == 0, shown.stderr
    assert shown.out_lines == [
        "judge      1 run(s), 5 done, 0 failed; tokens 300 in, 60 out; $0.0042",
        "total      1 run(s), 5 done, 0 failed; tokens 300 in, 60 out; $0.0042",
    ]
    every = await overbrainer(root, "history", "--all", url=stub.url)
    assert every.code == 0, every.stderr
    [entry] = every.out_lines
    assert entry.endswith(
        "  judge      ok           judge-model  5 done, 0 skipped, 0 failed, 0 excluded; "
        "tokens 300 in, 60 out; $0.0042"
    )


async def test_the_cap_stops_the_judging_and_a_higher_one_resumes(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", concurrency=1)
    compare_id = answered_compare(root)
    folder = _folder(root, compare_id)
    worst = _worst(root, compare_id)
    # Requests k = 0, 1, 2 fit (k * EACH + worst <= cap); the fourth does not.
    cap = float(worst + EACH * 5 / 2)

    async with open_stub(scripted_judge) as stub:
        stub.models = JUDGE_PRICES
        result = await overbrainer(
            root, "compare", "--rejudge", compare_id, "--max-cost", repr(cap), url=stub.url
        )
        assert _judged(stub.requests) == [0, 1, 2]
    assert result.code == 1, result.stderr
    assert result.out_lines == []
    found = CAPPED.fullmatch(result.stderr.strip().splitlines()[-1])
    assert found is not None, result.stderr
    assert found.groups() == (usd(3 * EACH)[1:], usd(cap)[1:], usd(worst)[1:], compare_id)
    assert _verdict_ids(folder) == ["q0", "q1", "q2"]
    assert not (folder / "compare.md").exists()
    [line] = history(root)
    assert (line.stage, line.status, line.done, line.skipped) == (
        Stage.JUDGE,
        HistoryStatus.INTERRUPTED,
        3,
        0,
    )
    assert (line.input_tokens, line.output_tokens) == (150, 30)
    assert line.cost == pytest.approx(float(3 * EACH))
    assert line.reason == f"spend cap reached: {usd(3 * EACH)} of {usd(cap)}"

    # `[pipeline] max_cost_usd` is the cap when --max-cost is not given.
    async with open_stub(scripted_judge) as stub:
        stub.models = JUDGE_PRICES
        env = {"OVERBRAINER_PIPELINE__MAX_COST_USD": "1"}
        resumed = await overbrainer(root, "compare", "--rejudge", compare_id, url=stub.url, env=env)
        assert resumed.code == 0, resumed.stderr
        assert _judged(stub.requests) == [3, 3, 4]
    assert sorted(_verdict_ids(folder)) == [f"q{n}" for n in range(5)]
    second = history(root)[1]
    assert (second.status, second.done, second.skipped, second.input_tokens) == (
        HistoryStatus.OK,
        2,
        3,
        150,
    )
    report = json.loads((folder / "compare.json").read_text())
    assert report["judge_usage"]["input_tokens"] == 150
    assert report["judge_usage"]["earlier_verdicts"] == 3
    md = (folder / "compare.md").read_text()
    assert "- The judge cost counts this command's requests only: 3 verdict(s) came" in md
    assert format_history(history(root))[0].startswith("judge      2 run(s), 5 done, 0 failed;")


async def test_a_cap_without_the_judges_price_is_refused_before_anything(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p")
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(root, "compare", "--max-cost", "5", url=stub.url)
        assert result.code == 2, result.stderr
        assert result.stderr.strip().splitlines()[-1] == "error: --max-cost needs known prices"
        assert _judged(stub.requests) == []
    assert not (root / "runs" / RUN_ID / "compares").exists()
    assert history(root) == []


@pytest.mark.sigint
async def test_ctrl_c_while_judging_writes_an_interrupted_line(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", concurrency=1)
    compare_id = answered_compare(root)
    folder = _folder(root, compare_id)

    def slow_after_one(request: Recorded) -> Reply:
        number = question_number(request)
        return Reply(SCRIPTED[2], usage=(50, 10), delay=0.0 if number == 0 else 60.0)

    env = {"OVERBRAINER_PIPELINE__DRAIN_SECS": "0.5"}
    async with open_stub(slow_after_one) as stub, trio.open_nursery() as nursery:
        stub.models = JUDGE_PRICES
        process = await start(
            nursery, root, "compare", "--rejudge", compare_id, url=stub.url, env=env
        )
        await wait_until(lambda: _verdict_ids(folder) == ["q0"], limit=60, every=0.1)
        await wait_until(lambda: _judged(stub.requests) == [0, 1], limit=60)
        os.kill(process.pid, signal.SIGINT)
        with trio.fail_after(30):
            await process.wait()
    assert process.returncode == 130
    assert (root / "stderr.txt").read_text().splitlines()[-1] == (
        "interrupted: the verdicts so far are kept; resume with "
        f"`overbrainer compare --rejudge {compare_id}`"
    )
    [line] = history(root)
    assert (line.stage, line.status, line.done, line.input_tokens, line.output_tokens) == (
        Stage.JUDGE,
        HistoryStatus.INTERRUPTED,
        1,
        50,
        10,
    )
    assert line.cost == pytest.approx(float(EACH))


async def test_a_failing_judge_writes_a_failed_line(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", concurrency=1)
    compare_id = answered_compare(root)

    def fails_on_q2(request: Recorded) -> Reply:
        if question_number(request) == 2:
            return Reply("overloaded", status=500)
        return scripted_judge(request)

    async with open_stub(fails_on_q2) as stub:
        stub.models = JUDGE_PRICES
        result = await overbrainer(root, "compare", "--rejudge", compare_id, url=stub.url)
    assert result.code == 1, result.stderr
    assert result.stderr.splitlines()[-1].startswith("error: the judge failed on question q2: ")
    [line] = history(root)
    assert (line.status, line.done, line.failed, line.input_tokens) == (
        HistoryStatus.FAILED,
        2,
        1,
        100,
    )
    assert line.cost == pytest.approx(float(2 * EACH))


async def test_replies_without_usage_are_estimated_and_marked(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", questions=1)
    compare_id = answered_compare(root)
    reply = '{"verdict": "tie", "reason": "same"}'
    async with open_stub(lambda _: Reply(reply, usage=None)) as stub:
        stub.models = JUDGE_PRICES
        result = await overbrainer(root, "compare", "--rejudge", compare_id, url=stub.url)
        [asked] = [r for r in stub.requests if r.is_completion]
    assert result.code == 0, result.stderr
    tokens_in = estimate_tokens(asked.prompt)
    tokens_out = estimate_tokens(reply)
    [line] = history(root)
    assert line.cost_estimated
    assert (line.input_tokens, line.output_tokens) == (tokens_in, tokens_out)
    usage = json.loads((_folder(root, compare_id) / "compare.json").read_text())["judge_usage"]
    assert (usage["input_tokens"], usage["estimated"]) == (tokens_in, True)
    every = await overbrainer(root, "history", "--all", url=stub.url)
    assert every.out_lines[0].endswith(" (estimated)")


async def test_an_unreadable_judge_reply_is_counted_and_the_cap_stops_its_retry(
    tmp_path: Path,
) -> None:
    root = make_compare_project(tmp_path / "p", concurrency=1)
    compare_id = answered_compare(root)
    worst = _worst(root, compare_id)
    async with open_stub(lambda _: Reply(body=b"<html>502 bad gateway</html>")) as stub:
        stub.models = JUDGE_PRICES
        # The first ask fits; once its unreadable reply is counted, its retry does not.
        cap = float(worst) * 1.001
        result = await overbrainer(
            root, "compare", "--rejudge", compare_id, "--max-cost", repr(cap), url=stub.url
        )
        asked = [r for r in stub.requests if r.is_completion]
    # Before, an unreadable reply was free: all its retries went out and the judging cost $0.
    assert len(asked) == 1
    paid = exact_cost(unreadable_usage(request_of(asked[0])), JUDGE_PRICE)
    assert result.code == 1, result.stderr
    found = CAPPED.fullmatch(result.stderr.strip().splitlines()[-1])
    assert found is not None, result.stderr
    assert found.group(1) == usd(paid)[1:]
    assert "judge: a paid reply could not be read: counted as its prompt" in result.stderr
    [line] = history(root)
    assert (line.stage, line.status, line.cost_estimated) == (
        Stage.JUDGE,
        HistoryStatus.INTERRUPTED,
        True,
    )
    assert line.output_tokens == 256
    assert line.cost == pytest.approx(float(paid))
