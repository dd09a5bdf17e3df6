"""`answers --force` replaces, never deletes first: kill -9, Ctrl-C, HTTP 400, the spend cap.

Each test runs the real command against the stub and checks `answers.jsonl` line by line: every
selected question has its old answer or its new one at every moment, and the rerun finishes.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from pathlib import Path

import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Reply
from overbrainer.storage.records import Example, Question
from tests.force_support import OLD, Watcher, delayed, force_state, old_answers, whole_lines
from tests.pipeline_support import (
    PRICES,
    completion_prompts,
    make_project,
    overbrainer,
    read_examples,
    start,
    wait_until,
    write_questions,
)


def _answers(root: Path) -> Path:
    return root / "data" / "answers.jsonl"


def every_question_has_a_record(root: Path, questions: Sequence[Question]) -> Watcher:
    """A watcher: each complete line is a whole answer, and every question has one."""
    wanted = {q.id for q in questions}

    def check() -> str | None:
        ids = {Example.from_json(line).id for line in whole_lines(_answers(root))}
        missing = wanted - ids
        return f"{len(missing)} question(s) without an answer" if missing else None

    return Watcher(check)


def _new(examples: list[Example]) -> set[str]:
    return {e.id for e in examples if e.messages[-1].content != OLD}


async def test_kill_9_midway_keeps_every_answer_and_the_rerun_redoes_only_the_rest(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", concurrency=4)
    questions = write_questions(root, 30)
    old_answers(root, questions)
    watcher = every_question_has_a_record(root, questions)
    async with open_stub(delayed(0.05)) as stub, trio.open_nursery() as nursery:
        nursery.start_soon(watcher.run)
        process = await start(nursery, root, "answers", "--force", url=stub.url)
        await wait_until(lambda: len(_new(read_examples(root))) >= 8)
        os.kill(process.pid, signal.SIGKILL)
        with trio.fail_after(5):
            assert await process.wait() == -signal.SIGKILL
        assert watcher.failure is None, watcher.failure
        lines = whole_lines(_answers(root))
        # The old answers of the redone questions are still there, superseded by later lines.
        assert len(lines) > 30
        redone = _new([Example.from_json(line) for line in lines])
        assert 8 <= len(redone) < 30
        asked = len(stub.completions)

        stub.responder = delayed(0.0)
        rerun = await overbrainer(root, "answers", url=stub.url)
        assert rerun.code == 0, rerun.stderr
        assert rerun.out_lines[0].startswith(f"answers: {30 - len(redone)} done, {len(redone)}")
        texts = {q.id: q.text for q in questions}
        assert sorted(completion_prompts(stub)[asked:]) == sorted(
            texts[i] for i in texts if i not in redone
        )
        nursery.cancel_scope.cancel()
    assert watcher.failure is None, watcher.failure
    assert watcher.rounds > 10
    final = read_examples(root)
    assert sorted(e.id for e in final) == sorted(texts)  # one line per question, all new
    assert _new(final) == set(texts)
    assert force_state(root, "answers") is None


async def test_ctrl_c_midway_keeps_the_old_answers_of_the_questions_not_redone(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", concurrency=3)
    questions = write_questions(root, 12)
    old_lines = old_answers(root, questions)
    watcher = every_question_has_a_record(root, questions)
    async with open_stub(delayed(2.0)) as stub, trio.open_nursery() as nursery:
        nursery.start_soon(watcher.run)
        process = await start(nursery, root, "answers", "--force", url=stub.url)
        await wait_until(lambda: len(stub.completions) == 3)
        process.send_signal(signal.SIGINT)
        with trio.fail_after(10):
            assert await process.wait() == 130
        assert watcher.failure is None, watcher.failure
        # Settled on the way out: one line per question, the 3 drained answers new.
        stored = read_examples(root)
        assert sorted(e.id for e in stored) == sorted(q.id for q in questions)
        redone = _new(stored)
        assert len(redone) == 3
        kept = [e.to_json() for e in stored if e.id not in redone]
        assert kept == [line for line in old_lines if Example.from_json(line).id not in redone]
        state = force_state(root, "answers")
        assert state is not None and state["topics"] == ["async", "ownership"]

        # Run with --force again: it continues the unfinished force, not starts over.
        stub.responder = delayed(0.0)
        rerun = await overbrainer(root, "answers", "--force", url=stub.url)
        assert rerun.code == 0, rerun.stderr
        assert rerun.out_lines[0].startswith("answers: 9 done, 3 skipped")
        assert len(stub.completions) == 12
        nursery.cancel_scope.cancel()
    assert watcher.failure is None, watcher.failure
    final = read_examples(root)
    assert sorted(e.id for e in final) == sorted(q.id for q in questions)
    assert _new(final) == {q.id for q in questions}
    assert force_state(root, "answers") is None


async def test_a_provider_answering_400_keeps_every_old_answer(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=4)
    questions = write_questions(root, 12)
    old_answers(root, questions)
    before = _answers(root).read_bytes()
    async with open_stub(lambda _: Reply(status=400, body=b'{"error":"no such model"}')) as stub:
        result = await overbrainer(root, "answers", "--force", url=stub.url)
    assert result.code == 1
    assert _answers(root).read_bytes() == before
    state = force_state(root, "answers")
    assert state is not None
    pending = state["pending"]
    assert isinstance(pending, dict)
    assert set(pending["ownership"]) == {q.id for q in questions}


async def test_the_spend_cap_keeps_the_old_answers_it_did_not_redo(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    questions = write_questions(root, 6)
    old_lines = old_answers(root, questions)
    # $0.20 an answer at the stub's prices, each reserved at its worst case (50 output tokens
    # at most): the cap admits some of the six, not all.
    env = {"OVERBRAINER_ROLES__PARENT__MAX_TOKENS": "50"}
    async with open_stub(lambda _: Reply(content="new", reasoning="r", usage=(100, 50))) as stub:
        stub.models = PRICES
        result = await overbrainer(
            root, "answers", "--force", "--max-cost", "0.5", url=stub.url, env=env
        )
        asked = {r.prompt for r in stub.completions}
    assert result.code == 1
    assert 0 < len(asked) < len(questions)
    stored = read_examples(root)
    assert sorted(e.id for e in stored) == sorted(q.id for q in questions)
    redone = _new(stored)
    assert {q.text for q in questions if q.id in redone} == asked
    kept = [e.to_json() for e in stored if e.id not in redone]
    assert kept == [line for line in old_lines if Example.from_json(line).id not in redone]


async def test_force_on_one_topic_leaves_the_others_alone(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=2)
    questions = write_questions(root, 3, topics=("ownership", "async"))
    old_lines = old_answers(root, questions)
    async with open_stub(delayed(0.0)) as stub:
        result = await overbrainer(root, "answers", "--force", "--topic", "async", url=stub.url)
    assert result.code == 0, result.stderr
    lines = _answers(root).read_text().splitlines()
    assert lines[:3] == old_lines[:3]  # ownership, untouched and in place
    assert _new([Example.from_json(line) for line in lines]) == {
        q.id for q in questions if q.topic == "async"
    }
    assert force_state(root, "answers") is None
