"""Stopping `overbrainer answers` midway: real SIGINT, kill -9, the lock."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from overbrainer.devtools.stub_provider import StubProvider, open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.net.http_server import Request, Response
from overbrainer.project.directory import Project, project_lock
from overbrainer.storage.history import HistoryStatus
from overbrainer.storage.jsonl import read_records
from overbrainer.storage.records import Example
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


def slow(delay: float) -> Callable[[Recorded], Reply]:
    def reply(request: Recorded) -> Reply:
        return Reply(
            content=f"Answer to {request.prompt}",
            reasoning="thinking",
            usage=(100, 50),
            delay=delay,
        )

    return reply


def assert_unlocked(root: Path) -> None:
    with project_lock(Project(root)):
        pass


async def test_first_sigint_drains_the_requests_in_flight_and_stores_them(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", concurrency=3, pipeline=FIXED_CONCURRENCY)
    questions = write_questions(root, 10)
    released = trio.Event()

    async def held(request: Recorded) -> Reply:
        # The replies wait for the test, so none finishes before the signal, however slow
        # the machine: a request sent after it is then the product's doing, not the clock's.
        await released.wait()
        return slow(0.0)(request)

    async with open_stub(held) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "answers", url=stub.url)
        await wait_until(lambda: len(stub.completions) == 3)
        # A second writer during the stage is refused, naming the holder.
        other = await overbrainer(root, "answers", url=stub.url)
        assert other.code == 2
        assert other.stderr.strip().splitlines()[-1] == (
            f"error: another overbrainer (pid {process.pid}) is using this project"
        )
        in_flight = set(completion_prompts(stub))
        assert len(in_flight) == 3
        process.send_signal(signal.SIGINT)
        await wait_until(lambda: "answers: stopping:" in (root / "stderr.txt").read_text())
        released.set()
        with trio.fail_after(8):
            code = await process.wait()
        assert code == 130
        assert len(stub.completions) == 3
        stored = read_examples(root)
        assert {e.messages[0].content for e in stored} == in_flight
        stderr = (root / "stderr.txt").read_text()
        assert stderr.strip().splitlines()[-1] == INTERRUPTED
        assert (root / "stdout.txt").read_text().splitlines() == [
            "answers: 3 done, 0 skipped, 0 failed, 0 excluded; tokens 300 in, 150 out; cost unknown"
        ]
        [line] = history(root)
        assert (line.status, line.done, line.skipped) == (HistoryStatus.INTERRUPTED, 3, 0)
        assert_unlocked(root)

        stub.responder = slow(0.0)
        rerun = await overbrainer(root, "answers", url=stub.url)
        assert rerun.code == 0, rerun.stderr
        asked_again = completion_prompts(stub)[3:]
        assert sorted(asked_again) == sorted({q.text for q in questions} - in_flight)


@pytest.mark.quick  # an end-to-end path of the quick tier
async def test_second_sigint_cancels_the_requests_in_flight_at_once(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=3)
    write_questions(root, 6)
    async with open_stub(slow(20.0)) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "answers", url=stub.url)
        await wait_until(lambda: len(stub.completions) == 3)
        process.send_signal(signal.SIGINT)
        await wait_until(lambda: "stopping: waiting up to 30s" in (root / "stderr.txt").read_text())
        begun = trio.current_time()
        process.send_signal(signal.SIGINT)
        with trio.fail_after(5):
            code = await process.wait()
        assert trio.current_time() - begun < 3
        assert code == 130
        nursery.cancel_scope.cancel()
    assert read_examples(root) == []
    assert (root / "stderr.txt").read_text().strip().splitlines()[-1] == INTERRUPTED
    [line] = history(root)
    assert (line.status, line.done) == (HistoryStatus.INTERRUPTED, 0)
    assert_unlocked(root)


async def test_the_end_of_the_grace_cancels_the_requests_in_flight(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=2, pipeline="drain_secs = 0.5")
    write_questions(root, 4)
    async with open_stub(slow(20.0)) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "answers", url=stub.url)
        await wait_until(lambda: len(stub.completions) == 2)
        begun = trio.current_time()
        process.send_signal(signal.SIGINT)
        with trio.fail_after(5):
            code = await process.wait()
        assert 0.5 <= trio.current_time() - begun < 3
        assert code == 130
        nursery.cancel_scope.cancel()
    assert read_examples(root) == []
    assert "answers: 2 request(s) in flight cancelled" in (root / "stderr.txt").read_text()


async def test_kill_9_midway_then_a_rerun_answers_each_question_exactly_once(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", concurrency=4)
    questions = write_questions(root, 30)
    answers = root / "data" / "answers.jsonl"

    def stored_lines() -> int:
        return answers.read_bytes().count(b"\n") if answers.exists() else 0

    async with open_stub(slow(0.05)) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "answers", url=stub.url)
        await wait_until(lambda: stored_lines() >= 8)
        os.kill(process.pid, signal.SIGKILL)
        with trio.fail_after(5):
            assert await process.wait() == -signal.SIGKILL
        kept = {e.id for e in read_records(answers, Example.from_json)}
        assert 8 <= len(kept) < 30
        asked = len(stub.completions)

        stub.responder = slow(0.0)
        rerun = await overbrainer(root, "answers", url=stub.url)
        assert rerun.code == 0, rerun.stderr
        assert rerun.out_lines[0].startswith(f"answers: {30 - len(kept)} done, {len(kept)} skipped")
        texts = {q.id: q.text for q in questions}
        assert sorted(completion_prompts(stub)[asked:]) == sorted(
            texts[i] for i in texts if i not in kept
        )
    final = read_examples(root)  # every line a whole record
    assert sorted(e.id for e in final) == sorted(texts)


async def test_a_cap_with_an_unknown_price_refuses_to_start(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", pipeline="max_cost_usd = 1.0")
    write_questions(root, 2)
    async with open_stub(slow(0.0)) as stub:
        result = await overbrainer(root, "answers", url=stub.url)
        assert stub.completions == []
    assert result.code == 2
    assert result.stderr.strip().splitlines()[-1] == "error: --max-cost needs known prices"
    assert history(root) == []


class SlowPrices(StubProvider):
    """A provider whose model listing never comes."""

    def __init__(self) -> None:
        super().__init__(slow(0.0))
        self.listing = trio.Event()

    async def handle(self, request: Request) -> Response:
        if request.path.endswith("/models"):
            self.listing.set()
            await trio.sleep_forever()
        return await super().handle(request)


async def test_ctrl_c_while_prices_are_looked_up_stops_at_once(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 2)
    stub = SlowPrices()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(stub.serve)
        process = await start(nursery, root, "answers", url=url)
        with trio.fail_after(10):
            await stub.listing.wait()
        process.send_signal(signal.SIGINT)
        with trio.fail_after(3):
            assert await process.wait() == 130
        nursery.cancel_scope.cancel()
    assert stub.completions == []
    assert (root / "stderr.txt").read_text().strip().splitlines()[-1] == INTERRUPTED
    assert history(root) == []
    assert_unlocked(root)
