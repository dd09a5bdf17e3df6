"""Estimates that help: a realistic low end, and a cap that says what it does to a run."""

from __future__ import annotations

import re
from pathlib import Path

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Reply
from overbrainer.storage.history import HistoryStatus
from tests.pipeline_support import PRICES, history, make_project, overbrainer, write_questions
from tests.test_estimate import PARENT, number, parse


async def test_without_history_the_low_end_assumes_each_roles_floor(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")  # two topics, 2 subtopics x 2 questions each
    async with open_stub() as stub:
        stub.models = PRICES
        result = await overbrainer(root, "estimate", url=stub.url)
    assert result.code == 0, result.stderr
    lines = parse(result.stdout)
    # A floor, not an average: a short list (60, 100 tokens), a short answer (100). It was
    # 400 and 1,200 (and before, a quarter of max_tokens: 4,096 each).
    outputs = {stage: number(line["tout"]) for stage, line in lines.items()}
    assert outputs == {"subtopics": 2 * 60, "questions": 4 * 100, "answers": 8 * 100}
    assert {stage: line["basis"] for stage, line in lines.items()} == {
        "subtopics": "no topics measured yet: at least 60 out each",
        "questions": "no subtopics measured yet: at least 100 out each",
        "answers": "no answers measured yet: at least 100 out each",
    }
    # Nothing is stored yet: every question and answer is planned.
    assert (lines["questions"]["present"], lines["questions"]["planned"]) == ("0", "4")
    assert (lines["answers"]["present"], lines["answers"]["planned"]) == ("0", "8")
    answers = lines["answers"]
    tin = number(answers["tin"])
    assert number(answers["low"]) == round(tin * PARENT[0] + 8 * 100 * PARENT[1], 2)
    assert number(answers["high"]) > round(tin * PARENT[0] + 8 * 16384 * PARENT[1], 2)


async def test_a_cap_above_the_low_end_runs_without_a_warning_and_says_it_throttles_once(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub:
        stub.models = PRICES
        result = await overbrainer(root, "run", "--no-train", "--max-cost", "40", url=stub.url)
    assert result.code == 0, result.stderr
    assert "below the estimate's low end" not in result.stderr
    # One answer's worst case is about $33 (16,384 tokens out): the cap lets one run at a time.
    throttled = re.findall(
        r"the spend cap \$40\.0000 lets only 1 request run at once", result.stderr
    )
    assert len(throttled) == 1, result.stderr
    assert "lower max_tokens to run more at once" in result.stderr
    assert [h.status for h in history(root)] == [HistoryStatus.OK] * 4


async def test_a_cap_below_one_requests_worst_case_says_what_to_change(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 2)
    async with open_stub(lambda _: Reply(content="A.", reasoning="R.")) as stub:
        stub.models = PRICES
        result = await overbrainer(root, "answers", "--max-cost", "0.01", url=stub.url)
        assert stub.completions == []
    assert result.code == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert re.fullmatch(
        r"error: the spend cap \$0\.0100 is below one request's worst case \$3\d\.\d{4}: "
        r"raise --max-cost or lower max_tokens",
        last,
    ), last
    assert "run the command again" not in result.stderr
    [line] = history(root)
    assert line.reason == "spend cap reached: $0.0000 of $0.0100"


async def test_history_averages_over_every_answer_excluded_ones_included(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 4)
    # Half the answers lack reasoning and are excluded; each reply is paid for all the same.
    count = iter(range(100))

    def reply(_: object) -> Reply:
        return Reply(content="A.", reasoning="R." if next(count) % 2 else None, usage=(100, 50))

    async with open_stub(reply) as stub:
        stub.models = PRICES
        first = await overbrainer(root, "answers", url=stub.url)
        assert first.out_lines[0].startswith("answers: 2 done, 0 skipped, 0 failed, 2 excluded")
        write_questions(root, 6)  # the same four, and two more
        result = await overbrainer(root, "estimate", url=stub.url)
    assert result.code == 0, result.stderr
    # 8 to do: the 2 new questions (present) and the 6 the topics' counts still call for
    # (planned); 100 in and 50 out per answer (it was per answer kept: 200 in and 100 out).
    line = parse(result.stdout)["answers"]
    assert (line["items"], line["present"], line["planned"], line["tin"], line["tout"]) == (
        "8",
        "2",
        "6",
        "800",
        "400",
    )
    assert line["basis"] == "measured over 4 earlier answers"
