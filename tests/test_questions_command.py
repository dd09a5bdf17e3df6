"""`overbrainer questions` as a real process: kill -9 or Ctrl-C midway, then a resume."""

from __future__ import annotations

import os
import signal
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import attrs
import trio

from overbrainer.devtools.stub_model import default_reply
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.storage.ids import subtopic_id
from overbrainer.storage.jsonl import read_records
from overbrainer.storage.records import Question, Subtopic
from tests.pipeline_support import make_project, overbrainer, start, wait_until

# Per topic; each needs 2 questions, asked one at a time. Names far apart, so the stub's
# questions on them are never near-duplicates.
NAMES = ("Borrowing", "Lifetimes", "Traits", "Closures", "Macros", "Generics")
SUBTOPICS = len(NAMES)


def slow(delay: float) -> Callable[[Recorded], Reply]:
    def reply(request: Recorded) -> Reply:
        return attrs.evolve(default_reply(request), delay=delay)

    return reply


def project(root: Path) -> tuple[Path, list[Subtopic]]:
    make_project(root, concurrency=3, pipeline="question_batch_size = 1")
    subtopics = [
        Subtopic(subtopic_id(topic, name), topic, name)
        for topic in ("ownership", "async")
        for name in NAMES
    ]
    (root / "data").mkdir()
    (root / "data" / "subtopics.jsonl").write_text("".join(s.to_json() + "\n" for s in subtopics))
    return root, subtopics


def stored(root: Path) -> list[Question]:
    return read_records(root / "data" / "questions.jsonl", Question.from_json)


def full_subtopics(questions: list[Question]) -> int:
    return sum(count >= 2 for count in Counter(q.subtopic_id for q in questions).values())


def assert_complete(root: Path, subtopics: list[Subtopic]) -> None:
    path = root / "data" / "questions.jsonl"
    lines = path.read_text().splitlines()
    questions = [Question.from_json(line) for line in lines]  # every line whole
    assert Counter(q.subtopic_id for q in questions) == {s.id: 2 for s in subtopics}
    assert len({q.id for q in questions}) == len(questions)


async def test_kill_9_midway_then_a_rerun_fills_each_subtopic_exactly(tmp_path: Path) -> None:
    root, subtopics = project(tmp_path / "p")
    async with open_stub(slow(0.05)) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "questions", url=stub.url)
        await wait_until(lambda: len(stored(root)) >= 7)
        os.kill(process.pid, signal.SIGKILL)
        with trio.fail_after(5):
            assert await process.wait() == -signal.SIGKILL
        full = full_subtopics(stored(root))
        assert full < 2 * SUBTOPICS

        stub.responder = slow(0.0)
        rerun = await overbrainer(root, "questions", url=stub.url)
    assert rerun.code == 0, rerun.stderr
    assert rerun.out_lines[0].startswith(
        f"questions: {2 * SUBTOPICS - full} done, {full} skipped, 0 failed, 0 excluded;"
    )
    assert_complete(root, subtopics)


async def test_ctrl_c_midway_keeps_what_was_admitted_and_a_rerun_finishes(
    tmp_path: Path,
) -> None:
    root, subtopics = project(tmp_path / "p")
    async with open_stub(slow(0.2)) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "questions", url=stub.url)
        await wait_until(lambda: len(stored(root)) >= 3)
        process.send_signal(signal.SIGINT)
        with trio.fail_after(10):
            assert await process.wait() == 130
        asked = len(stub.completions)
        kept = stored(root)
        # The requests in flight at Ctrl-C finished and were stored; no new one started.
        assert len(kept) == asked
        stderr = (root / "stderr.txt").read_text()
        assert "interrupted: the stage resumes on its next run" in stderr

        stub.responder = slow(0.0)
        rerun = await overbrainer(root, "questions", url=stub.url)
    assert rerun.code == 0, rerun.stderr
    assert_complete(root, subtopics)
    assert stored(root)[: len(kept)] == kept
