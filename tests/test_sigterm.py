"""SIGTERM (`kill PID`, a service stop) stops a stage like Ctrl-C: drained and recorded."""

from __future__ import annotations

import signal
from pathlib import Path

import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.project.directory import Project, project_lock
from overbrainer.storage.history import HistoryStatus
from tests.pipeline_support import (
    FIXED_CONCURRENCY,
    completion_prompts,
    history,
    make_project,
    overbrainer,
    read_examples,
    start,
    wait_until,
    write_questions,
)

INTERRUPTED = "interrupted: the stage resumes on its next run"


def slow(request: Recorded) -> Reply:
    return Reply(content=f"Answer to {request.prompt}", reasoning="r", usage=(10, 5), delay=2.0)


async def test_sigterm_in_answers_drains_records_and_exits_130(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=2, pipeline=FIXED_CONCURRENCY)
    questions = write_questions(root, 5)
    async with open_stub(slow) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "answers", url=stub.url)
        await wait_until(lambda: len(stub.completions) == 2)
        in_flight = set(completion_prompts(stub))
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(8):
            code = await process.wait()
        assert code == 130
        assert {e.messages[0].content for e in read_examples(root)} == in_flight
        assert (root / "stdout.txt").read_text().splitlines() == [
            "answers: 2 done, 0 skipped, 0 failed, 0 excluded; tokens 20 in, 10 out; cost unknown"
        ]
        assert (root / "stderr.txt").read_text().strip().splitlines()[-1] == INTERRUPTED
        [line] = history(root)
        assert (line.status, line.done) == (HistoryStatus.INTERRUPTED, 2)
        assert (root / ".overbrainer" / "lock").read_text() == ""
        with project_lock(Project(root)):
            pass

        stub.responder = lambda request: Reply(content="a", reasoning="r")
        rerun = await overbrainer(root, "answers", url=stub.url)
        assert rerun.code == 0, rerun.stderr
    assert sorted(e.id for e in read_examples(root)) == sorted(q.id for q in questions)


async def test_a_second_sigterm_cancels_what_is_in_flight(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=2)
    write_questions(root, 4)
    async with open_stub(slow) as stub, trio.open_nursery() as nursery:
        stub.responder = lambda request: Reply(content="a", reasoning="r", delay=30.0)
        process = await start(nursery, root, "answers", url=stub.url)
        await wait_until(lambda: len(stub.completions) == 2)
        process.send_signal(signal.SIGTERM)
        await wait_until(lambda: "stopping: waiting up to" in (root / "stderr.txt").read_text())
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(5):
            assert await process.wait() == 130
        nursery.cancel_scope.cancel()
    assert read_examples(root) == []
    [line] = history(root)
    assert (line.status, line.done) == (HistoryStatus.INTERRUPTED, 0)
