"""`overbrainer quality` through the real command against the stub scripted as a judge."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Callable
from pathlib import Path

import trio

from overbrainer.devtools.stub_model import default_reply
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Json, Recorded, Reply
from overbrainer.pipeline.quality_scores import QualityScore, answer_sha
from overbrainer.storage.history import HistoryStatus
from overbrainer.storage.jsonl import read_records
from overbrainer.storage.records import Example
from tests.pipeline_support import (
    FIXED_CONCURRENCY,
    history,
    make_project,
    overbrainer,
    start,
    wait_until,
    write_answered,
)

INTERRUPTED = "interrupted: the stage resumes on its next run"
JUDGE = 'judge = { provider = "stub", model = "judge-model", max_tokens = 100 }'
CASE = re.compile(r"in case (\d+)\b")
PRICES: Json = {
    "data": [
        {"id": "judge-model", "pricing": {"prompt": "0.001", "completion": "0.002"}},
        {"id": "parent-model", "pricing": {"prompt": "0", "completion": "0"}},
        {"id": "gen-model", "pricing": {"prompt": "0", "completion": "0"}},
    ]
}


def judged_project(root: Path, *, concurrency: int = 4, judge: str = JUDGE) -> Path:
    """A project whose `[quality]` has the stub's judge-model (min_score 7)."""
    return make_project(root, concurrency=concurrency, pipeline=f"\n[quality]\n{judge}\n")


def score_of(case: int) -> int:
    """The scripted judge's score of the answer to question «… in case N?»."""
    return case % 10 + 1


def case_of(prompt: str) -> int:
    found = CASE.search(prompt)
    assert found is not None, prompt
    return int(found.group(1))


def judge(delay: float = 0.0) -> Callable[[Recorded], Reply]:
    """The stub as a judge: a score that is a rule of the question's number, with a reason."""

    def reply(request: Recorded) -> Reply:
        body = request.body_json
        if not (isinstance(body, dict) and body.get("model") == "judge-model"):
            return default_reply(request)
        prompt = request.prompt or ""
        case = case_of(prompt)
        text = f'Here: {{"score": {score_of(case)}, "reason": "case {case}"}}'
        return Reply(content=text, usage=(100, 20), delay=delay)

    return reply


def judge_prompts(recorded: list[Recorded]) -> list[int]:
    """The question numbers the judge was asked about, in order."""
    return [
        case_of(r.prompt or "")
        for r in recorded
        if isinstance(r.body_json, dict) and r.body_json.get("model") == "judge-model"
    ]


def scores(root: Path) -> list[QualityScore]:
    path = root / "data" / "quality.jsonl"
    return read_records(path, QualityScore.from_json) if path.exists() else []


def cases_of(root: Path) -> dict[str, int]:
    """Each stored answer's ID with its question's number."""
    examples = read_records(root / "data" / "answers.jsonl", Example.from_json)
    return {e.id: case_of(e.messages[0].content + " ") for e in examples}


USABLE = range(1, 20)
"""`write_answered(root, 20)`: answer 0 is truncated (excluded), 1..19 are usable."""
LOW = [case for case in USABLE if score_of(case) < 7]


async def test_scores_every_usable_answer_once_and_split_leaves_out_the_low_ones(
    tmp_path: Path,
) -> None:
    root = judged_project(tmp_path / "p")
    write_answered(root, 20)
    async with open_stub(judge()) as stub:
        result = await overbrainer(root, "quality", url=stub.url)
        assert result.code == 0, result.stderr
        assert result.out_lines == [
            "quality: 19 done, 0 skipped, 0 failed, 0 excluded; "
            "tokens 1900 in, 380 out; cost unknown"
        ]
        assert sorted(judge_prompts(stub.completions)) == list(USABLE)
        stored = scores(root)
        cases = cases_of(root)
        assert len(stored) == 19
        assert {cases[s.id]: (s.score, s.reason) for s in stored} == {
            case: (score_of(case), f"case {case}") for case in USABLE
        }
        lines = (root / "data" / "answers.jsonl").read_text().splitlines()
        shas = {Example.from_json(line).id: answer_sha(line) for line in lines}
        assert all(s.answer_sha == shas[s.id] and s.model == "judge-model" for s in stored)
        assert len({s.prompt_sha for s in stored}) == 1

        again = await overbrainer(root, "quality", url=stub.url)
        assert again.code == 0, again.stderr
        assert again.out_lines[0].startswith("quality: 0 done, 19 skipped, 0 failed")
        assert len(judge_prompts(stub.completions)) == 19

        split = await overbrainer(root, "split", url=stub.url)
    assert split.code == 0, split.stderr
    kept = 19 - len(LOW)
    [line] = split.out_lines
    found = re.fullmatch(
        r"split: (\d+) train, (\d+) eval, (\d+) excluded \(truncated 1, quality (\d+)\), "
        r"0 orphaned",
        line,
    )
    assert found is not None, line
    train, evaluation, excluded, quality = map(int, found.groups())
    assert (train + evaluation, excluded, quality) == (kept, 1 + len(LOW), len(LOW))
    written = read_records(root / "data" / "train.jsonl", Example.from_json)
    written += read_records(root / "data" / "eval.jsonl", Example.from_json)
    assert sorted(cases[e.id] for e in written) == [c for c in USABLE if score_of(c) >= 7]
    stages = [(r.stage.value, r.status, r.excluded) for r in history(root)]
    assert stages == [
        ("quality", HistoryStatus.OK, 0),
        ("quality", HistoryStatus.OK, 0),
        ("split", HistoryStatus.OK, 1 + len(LOW)),
    ]


async def test_a_reanswered_answer_is_scored_again_and_its_old_score_no_longer_counts(
    tmp_path: Path,
) -> None:
    root = judged_project(tmp_path / "p")
    write_answered(root, 20)
    async with open_stub(judge()) as stub:
        assert (await overbrainer(root, "quality", url=stub.url)).code == 0
        # Answer 3 (score 4) is answered again, as `answers --force` appends it.
        answers = root / "data" / "answers.jsonl"
        line = next(x for x in answers.read_text().splitlines() if "in case 3 (" in x)
        example = Example.from_json(line)
        replaced = json.loads(line)
        replaced["messages"][1]["content"] = "A better answer, in case 3?"
        with answers.open("a") as out:
            out.write(json.dumps(replaced, separators=(",", ":")) + "\n")
        # Before it is scored again, split keeps it: its score was of the old text.
        split = await overbrainer(root, "split", url=stub.url)
        assert f"quality {len(LOW) - 1})" in split.out_lines[0]
        result = await overbrainer(root, "quality", url=stub.url)
        assert result.code == 0, result.stderr
        assert result.out_lines[0].startswith("quality: 1 done, 18 skipped, 0 failed")
        assert judge_prompts(stub.completions)[19:] == [3]
    latest = [s for s in scores(root) if s.id == example.id]
    assert len(latest) == 2 and latest[0].answer_sha != latest[1].answer_sha


async def test_an_unparsable_reply_is_asked_again_then_the_item_fails(tmp_path: Path) -> None:
    root = judged_project(tmp_path / "p")
    write_answered(root, 3)

    def reply(request: Recorded) -> Reply:
        if "in case 1 (" in (request.prompt or ""):
            return Reply(content='{"score": 11, "reason": "off the scale"}', usage=(100, 20))
        return judge()(request)

    async with open_stub(reply) as stub:
        result = await overbrainer(root, "quality", url=stub.url)
        assert judge_prompts(stub.completions).count(1) == 2
    assert result.code == 1
    assert result.out_lines[0].startswith("quality: 1 done, 0 skipped, 1 failed")
    assert result.stderr.strip().splitlines()[-1] == (
        "error: 1 quality item(s) failed; run the command again to retry them"
    )
    assert [s.score for s in scores(root)] == [score_of(2)]


async def test_without_a_judge_quality_is_bad_input(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_answered(root, 3)
    async with open_stub(judge()) as stub:
        result = await overbrainer(root, "quality", url=stub.url)
        assert stub.completions == []
    assert result.code == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        'error: no [quality] judge in overbrainer.toml: add judge = { provider = "...", '
        'model = "..." }'
    ]
    assert history(root) == []


async def test_kill_9_midway_then_a_rerun_scores_each_answer_exactly_once(
    tmp_path: Path,
) -> None:
    root = judged_project(tmp_path / "p", concurrency=2)
    write_answered(root, 20)
    async with open_stub(judge(0.1)) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "quality", url=stub.url)
        await wait_until(lambda: len(scores(root)) >= 5)
        process.kill()
        with trio.fail_after(5):
            await process.wait()
        first = {s.id for s in scores(root)}
        cases = cases_of(root)
        asked = len(stub.completions)
        stub.responder = judge()
        rerun = await overbrainer(root, "quality", url=stub.url)
        assert rerun.code == 0, rerun.stderr
        asked_again = judge_prompts(stub.completions[asked:])
    assert not {cases[i] for i in first} & set(asked_again)
    stored = scores(root)
    assert len(stored) == len({s.id for s in stored}) == 19
    assert rerun.out_lines[0].startswith(
        f"quality: {19 - len(first)} done, {len(first)} skipped, 0 failed"
    )


async def test_sigint_drains_the_requests_in_flight_and_stops_with_130(tmp_path: Path) -> None:
    root = make_project(
        tmp_path / "p", concurrency=3, pipeline=f"{FIXED_CONCURRENCY}\n\n[quality]\n{JUDGE}\n"
    )
    write_answered(root, 10)
    async with open_stub(judge(2.0)) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "quality", url=stub.url)
        await wait_until(lambda: len(stub.completions) == 3)
        process.send_signal(signal.SIGINT)
        with trio.fail_after(8):
            code = await process.wait()
        assert len(stub.completions) == 3
    assert code == 130
    assert len(scores(root)) == 3
    assert (root / "stderr.txt").read_text().strip().splitlines()[-1] == INTERRUPTED
    [line] = history(root)
    assert (line.stage.value, line.status, line.done) == ("quality", HistoryStatus.INTERRUPTED, 3)


async def test_the_spend_cap_stops_the_judge_before_it_goes_over(tmp_path: Path) -> None:
    root = judged_project(tmp_path / "p")
    write_answered(root, 20)
    async with open_stub(judge()) as stub:
        stub.models = PRICES
        result = await overbrainer(root, "quality", "--max-cost", "1.5", url=stub.url)
        asked = len(judge_prompts(stub.completions))
    # Each score costs 100 × $0.001 + 20 × $0.002 = $0.14; the worst case of the next one
    # (its whole prompt and max_tokens, about $1.01) must still fit under $1.50.
    assert 0 < asked < 11
    assert asked * 0.14 <= 1.5
    assert result.code == 1
    assert result.stderr.strip().splitlines()[-1].startswith("error: spend cap reached: $")
    assert len(scores(root)) == asked
    [line] = history(root)
    assert (line.stage.value, line.status) == ("quality", HistoryStatus.INTERRUPTED)
    assert line.cost is not None and line.cost <= 1


async def test_run_scores_between_answers_and_split(tmp_path: Path) -> None:
    root = judged_project(tmp_path / "p")
    async with open_stub(judge_any()) as stub:
        result = await overbrainer(root, "run", "--no-train", url=stub.url, limit=60)
    assert result.code == 0, result.stderr
    stages = [r.stage.value for r in history(root)]
    assert stages == ["subtopics", "questions", "answers", "quality", "split"]
    stored = scores(root)
    assert len(stored) == 8  # two topics, two subtopics each, two questions each
    low = sum(s.score < 7 for s in stored)
    split = result.out_lines[-1]
    assert split.startswith("split: ")
    if low:
        assert f"quality {low})" in split
    assert "estimate: quality: 8 to do (8 requests)" in result.stderr


def judge_any() -> Callable[[Recorded], Reply]:
    """The stub as a judge of any question: the score is a rule of the prompt's length."""

    def reply(request: Recorded) -> Reply:
        body = request.body_json
        if not (isinstance(body, dict) and body.get("model") == "judge-model"):
            return default_reply(request)
        score = len(request.prompt or "") % 10 + 1
        return Reply(content=f'{{"score": {score}, "reason": "by length"}}', usage=(50, 10))

    return reply
