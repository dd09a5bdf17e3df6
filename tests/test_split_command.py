"""`overbrainer split` end to end: its line, the rewritten files, the history split line."""

from __future__ import annotations

import json
from pathlib import Path

import attrs

from overbrainer.model.finish import FinishReason, ReasoningKind
from overbrainer.pipeline.split import stratify
from overbrainer.storage.history import HistoryStatus, SplitCounts
from overbrainer.storage.records import Example, Exclusion, Message, Meta, Question
from tests.pipeline_support import (
    history,
    make_project,
    overbrainer,
    read_examples,
    write_questions,
)


def answer(question: Question, excluded: Exclusion | None = None) -> Example:
    meta = Meta("parent-model", 10, 5, FinishReason.STOP, ReasoningKind.RAW, excluded)
    messages = (Message("user", question.text), Message("assistant", "A", "R"))
    return Example(question.id, question.topic, question.subtopic, messages, meta)


async def test_split_rewrites_train_and_eval_and_records_its_counts(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    questions = write_questions(root, 6, topics=("ownership", "async"))
    examples = [answer(q) for q in questions[:5]]
    examples.append(answer(questions[5], Exclusion.TRUNCATED))
    examples.append(answer(questions[6], Exclusion.NO_RAW_REASONING))
    examples += [answer(q) for q in questions[7:11]]
    gone = attrs.evolve(answer(questions[11]), id="0" * 32)
    retired = attrs.evolve(answer(questions[11]), topic="retired")
    examples += [gone, retired]
    lines = "".join(e.to_json() + "\n" for e in examples)
    (root / "data" / "answers.jsonl").write_text(lines)
    (root / "data" / "train.jsonl").write_text("stale\n")

    result = await overbrainer(root, "split", url="http://127.0.0.1:9/v1")
    assert result.code == 0, result.stderr
    assert result.out_lines == [
        "split: 8 train, 1 eval, 2 excluded (truncated 1, no_raw_reasoning 1), 2 orphaned"
    ]
    usable = examples[:5] + examples[7:11]
    train, evaluation = stratify(usable, 0.1, 42)
    assert read_examples(root, "train") == train
    assert read_examples(root, "eval") == evaluation
    assert (root / "data" / "answers.jsonl").read_text() == lines
    [line] = history(root)
    assert line.status is HistoryStatus.OK
    assert (line.provider, line.model, line.done, line.skipped, line.excluded) == (
        None,
        None,
        0,
        0,
        2,
    )
    assert line.split == SplitCounts(8, 1, 2)
    raw = json.loads((root / ".overbrainer" / "history.jsonl").read_text())
    assert list(raw)[-1] == "split"

    only = await overbrainer(root, "split", "--topic", "async", url="http://127.0.0.1:9/v1")
    assert only.code == 0, only.stderr
    async_train = sum(e.topic == "async" for e in train)
    async_eval = sum(e.topic == "async" for e in evaluation)
    assert only.out_lines == [
        f"split: {async_train} train, {async_eval} eval, 1 excluded (no_raw_reasoning 1), "
        "1 orphaned"
    ]


async def test_split_refuses_force_and_a_broken_answers_line(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 1)
    (root / "data" / "answers.jsonl").write_text('{"id":1}\n{"id"\n')
    forced = await overbrainer(root, "split", "--force", url="http://127.0.0.1:9/v1")
    assert forced.code == 2
    broken = await overbrainer(root, "split", url="http://127.0.0.1:9/v1")
    assert broken.code == 2
    last = broken.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {root}/data/answers.jsonl:1: invalid record")
    # Bad input: the stage did nothing, so it records nothing (tests/test_bad_input.py).
    assert history(root) == []


async def test_split_copies_each_answer_line_as_it_was_stored(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    questions = write_questions(root, 12)
    examples = [
        attrs.evolve(answer(q), messages=(Message("user", q.text), Message("assistant", "é中😀")))
        for q in questions
    ]
    lines = [e.to_json() for e in examples]
    lines[3] = lines[3].replace('{"id"', ' {"id"', 1) + "\r"  # odd but valid JSON: kept
    stored = "\n".join(lines[:6]) + "\n\n" + "\n".join(lines[6:])  # a blank line, no last \n
    (root / "data" / "answers.jsonl").write_bytes(stored.encode())

    result = await overbrainer(root, "split", url="http://127.0.0.1:9/v1")
    assert result.code == 0, result.stderr
    assert result.out_lines == ["split: 11 train, 1 eval, 0 excluded, 0 orphaned"]
    by_id = {e.id: line for e, line in zip(examples, lines, strict=True)}
    train, evaluation = stratify(examples, 0.1, 42)
    for name, expected in (("train", train), ("eval", evaluation)):
        written = (root / "data" / f"{name}.jsonl").read_bytes()
        assert written == "".join(by_id[e.id] + "\n" for e in expected).encode()
