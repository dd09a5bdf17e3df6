"""A split that leaves no train example fails with its reason (exit 1), and `run` stops there."""

from __future__ import annotations

import re
from pathlib import Path

from overbrainer.devtools.stub_model import default_reply
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.storage.history import HistoryStatus
from overbrainer.storage.records import Exclusion
from tests.pipeline_support import history, make_project, overbrainer, write_questions
from tests.test_split_command import answer

NOWHERE = "http://127.0.0.1:9/v1"


def write_excluded(root: Path, count: int) -> None:
    """`count` answered questions, every answer excluded for its missing raw reasoning."""
    questions = write_questions(root, count)
    lines = "".join(answer(q, Exclusion.NO_RAW_REASONING).to_json() + "\n" for q in questions)
    (root / "data" / "answers.jsonl").write_text(lines)


async def test_split_with_every_answer_excluded_fails_with_the_reason(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_excluded(root, 10)
    result = await overbrainer(root, "split", url=NOWHERE)
    # Before: the same line, and exit 0.
    assert result.code == 1, result.stderr
    assert result.out_lines == [
        "split: 0 train, 0 eval, 10 excluded (no_raw_reasoning 10), 0 orphaned"
    ]
    assert result.stderr.strip().splitlines()[-1] == (
        "error: split: 0 train examples: all 10 answers were excluded (no_raw_reasoning 10)"
    )
    assert (root / "data" / "train.jsonl").read_text() == ""
    [line] = history(root)
    assert (line.status, line.excluded) == (HistoryStatus.FAILED, 10)
    assert (
        line.reason == "split: 0 train examples: all 10 answers were excluded (no_raw_reasoning 10)"
    )


async def test_split_without_answers_fails_with_the_reason(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 3)
    result = await overbrainer(root, "split", url=NOWHERE)
    assert result.code == 1, result.stderr
    assert result.out_lines == ["split: 0 train, 0 eval, 0 excluded, 0 orphaned"]
    assert result.stderr.strip().splitlines()[-1] == (
        "error: split: 0 train examples: there are no answers yet (run `overbrainer answers`)"
    )


async def test_run_stops_at_a_split_without_train_examples(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")

    def reply(request: Recorded) -> Reply:
        body = request.body_json
        if isinstance(body, dict) and body.get("model") == "parent-model":
            # Every answer runs out of tokens: truncated, so excluded.
            return Reply(content="Half an", reasoning="Thinking.", finish_reason="length")
        return default_reply(request)

    async with open_stub(reply) as stub:
        result = await overbrainer(root, "run", "--no-train", url=stub.url, limit=60)
    assert result.code == 1, result.stderr
    last = result.out_lines[-1]
    found = re.fullmatch(
        r"split: 0 train, 0 eval, (\d+) excluded \(truncated \1\), 0 orphaned", last
    )
    assert found is not None, last
    answers = int(found.group(1))
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: split: 0 train examples: all {answers} answers were excluded (truncated {answers})"
    )
    assert "--no-train: run stops after split" not in result.stderr
