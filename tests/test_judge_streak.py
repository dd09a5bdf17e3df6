"""A judge that gives no parsable score for 10 items in a row stops `quality` (exit 2)."""

from __future__ import annotations

from pathlib import Path

from overbrainer.devtools.stub_model import default_reply
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.storage.history import HistoryStatus
from tests.compare_support import (
    JUDGE_PRICES,
    answered_compare,
    make_compare_project,
    question_number,
)
from tests.pipeline_support import history, make_project, overbrainer, write_answered
from tests.test_quality import JUDGE, judge, judge_prompts, judged_project, scores

NEVER = "I would rate this answer quite highly, it is clear and correct. " * 3
"""A judge's reply that never holds `{"score": N}` (a model that ignores the format)."""


def never_scores(request: Recorded) -> Reply:
    body = request.body_json
    if isinstance(body, dict) and body.get("model") == "judge-model":
        return Reply(content=NEVER, usage=(100, 20))
    return default_reply(request)


STOPPED = (
    "error: quality stopped: the `[quality] judge` model `judge-model` gave no parsable score "
    'for 10 items in a row (its last reply: "I would rate this answer quite highly, it is '
    'clear and correct. I would rate thi…"): use a `[quality] judge` model that '
    "follows prompts/quality.txt's JSON, or fix that prompt"
)


async def test_a_judge_that_never_scores_stops_after_ten_items(tmp_path: Path) -> None:
    root = judged_project(tmp_path / "p", concurrency=1)
    write_answered(root, 30)
    async with open_stub(never_scores) as stub:
        result = await overbrainer(root, "quality", url=stub.url)
        asked = judge_prompts(stub.completions)
    # Before, each of the 29 usable answers was asked twice: 58 requests, 29 failures.
    assert len(asked) == 20  # 10 items, each asked twice
    assert result.code == 2, result.stderr
    assert result.out_lines == [
        "quality: 0 done, 0 skipped, 10 failed, 0 excluded; tokens 2000 in, 400 out; cost unknown"
    ]
    assert result.stderr.strip().splitlines()[-1] == STOPPED
    [line] = history(root)
    assert (line.status, line.failed) == (HistoryStatus.FAILED, 10)


async def test_a_score_now_and_then_ends_the_streak(tmp_path: Path) -> None:
    root = judged_project(tmp_path / "p", concurrency=1)
    write_answered(root, 30)
    scored = judge()

    def every_ninth(request: Recorded) -> Reply:
        prompt = request.prompt or ""
        if "in case " in prompt and int(prompt.split("in case ")[1].split(" ")[0]) % 9 == 0:
            return scored(request)
        return never_scores(request)

    async with open_stub(every_ninth) as stub:
        result = await overbrainer(root, "quality", url=stub.url)
    assert result.code == 1, result.stderr
    assert result.out_lines[0].startswith("quality: 3 done, 0 skipped, 26 failed")
    assert len(scores(root)) == 3


async def test_run_stops_before_split_when_the_judge_never_scores(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=1, pipeline=f"\n[quality]\n{JUDGE}\n")
    write_answered(root, 30)
    async with open_stub(never_scores) as stub:
        result = await overbrainer(root, "run", "--no-train", url=stub.url, limit=60)
    assert result.code == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == STOPPED
    assert [r.stage.value for r in history(root)][-1] == "quality"


async def test_a_compare_judge_that_never_gives_a_verdict_stops_after_ten_questions(
    tmp_path: Path,
) -> None:
    root = make_compare_project(tmp_path / "p", concurrency=1, questions=14)
    compare_id = answered_compare(root)
    async with open_stub(lambda _: Reply(content=NEVER, usage=(50, 10))) as stub:
        stub.models = JUDGE_PRICES
        result = await overbrainer(root, "compare", "--rejudge", compare_id, url=stub.url)
        asked = sorted({question_number(r) for r in stub.requests if r.is_completion})
    # Before, every question was asked (twice per order) and recorded `unparsed`.
    assert asked == list(range(10))
    assert result.code == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "error: the `[roles.judge]` model `judge-model` gave no parsable verdict for 10 items "
        'in a row (its last reply: "I would rate this answer quite highly, it is clear and '
        "correct. I would rate thi…\"): use a judge model that follows the compare prompt's "
        "format, or fix that prompt"
    )
