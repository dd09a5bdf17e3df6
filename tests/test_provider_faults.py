"""A provider that cannot work, through the real command: Ctrl-C in a Retry-After wait, a dead
or killed provider, the same 400 for every item, a 401 midway, no retries at all."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
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
from tests.ports import free_port

INTERRUPTED = "interrupted: the stage resumes on its next run"
MANY_RETRIES = {"OVERBRAINER_PIPELINE__MAX_RETRIES": "10"}


def answering(delay: float = 0.0) -> Callable[[Recorded], Reply]:
    def reply(request: Recorded) -> Reply:
        return Reply(f"Answer to {request.prompt}", "thinking", usage=(100, 50), delay=delay)

    return reply


def last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


@pytest.mark.parametrize("adaptive", [True, False])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
async def test_no_request_after_the_first_sigint_during_a_retry_after_wait(
    tmp_path: Path, signum: signal.Signals, adaptive: bool
) -> None:
    pipeline = "" if adaptive else "adaptive = false"
    root = make_project(tmp_path / "p", concurrency=2, pipeline=pipeline)
    write_questions(root, 6)
    stderr = root / "stderr.txt"
    # Fixed concurrency sends two requests, both refused, both items then wait 20 s for their
    # retry. Adaptive sends one (it probes the limits first); its 429 pauses admission for
    # 20 s, so the other item waits to be admitted.
    refused = 1 if adaptive else 2
    async with open_stub(lambda _: Reply(status=429, headers={"retry-after": "20"})) as stub:
        async with trio.open_nursery() as nursery:
            process = await start(nursery, root, "answers", url=stub.url)
            await wait_until(lambda: stderr.read_text().count("retrying in 20.0s") == refused)
            begun = trio.current_time()
            process.send_signal(signum)
            with trio.fail_after(10):
                code = await process.wait()
            took = trio.current_time() - begun
        assert len(stub.completions) == refused  # the stand-in's log: nothing after the SIGINT
    assert code == 130
    assert took < 5  # not the 20 s wait, nor the 30 s drain
    assert last_line(stderr.read_text()) == INTERRUPTED
    assert "request(s) in flight cancelled" not in stderr.read_text()
    assert read_examples(root) == []
    [line] = history(root)
    # The waiting items are left for the next run, not failed.
    assert (line.status, line.done, line.failed) == (HistoryStatus.INTERRUPTED, 0, 0)


async def test_a_dead_provider_stops_the_stage_within_seconds_naming_the_host(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    write_questions(root, 20)
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    begun = trio.current_time()
    result = await overbrainer(root, "answers", url=url, env=MANY_RETRIES, limit=30)
    assert trio.current_time() - begun < 15
    assert result.code == 1
    assert last_line(result.stderr) == (
        f"error: cannot reach provider `stub` at 127.0.0.1:{port}: connection refused"
    )
    assert result.out_lines == [
        "answers: 0 done, 0 skipped, 1 failed, 0 excluded; tokens 0 in, 0 out; cost unknown"
    ]
    [line] = history(root)
    assert (line.status, line.done, line.failed) == (HistoryStatus.FAILED, 0, 1)


async def test_a_provider_killed_midway_stops_the_stage_soon_after(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=4)
    questions = write_questions(root, 200)
    answers = root / "data" / "answers.jsonl"

    def stored() -> int:
        return answers.read_bytes().count(b"\n") if answers.exists() else 0

    async with trio.open_nursery() as nursery:
        stub_scope = trio.CancelScope()

        async def serve(task_status: trio.TaskStatus[str]) -> None:
            with stub_scope:
                async with open_stub(answering(0.05)) as stub:
                    task_status.started(stub.url)
                    await trio.sleep_forever()

        url = await nursery.start(serve)
        process = await start(nursery, root, "answers", url=url, env=MANY_RETRIES)
        await wait_until(lambda: stored() >= 20)
        stub_scope.cancel()  # the provider dies: its port now refuses connections
        killed = trio.current_time()
        with trio.fail_after(40):
            code = await process.wait()
        took = trio.current_time() - killed
    assert code == 1
    assert took < 30
    port = url.split(":")[2].split("/")[0]
    stderr = (root / "stderr.txt").read_text()
    assert last_line(stderr) == (
        f"error: cannot reach provider `stub` at 127.0.0.1:{port}: connection refused"
    )
    kept = read_examples(root)
    assert 20 <= len(kept) < len(questions)
    [line] = history(root)
    assert (line.status, line.done) == (HistoryStatus.FAILED, len(kept))


async def test_the_same_400_for_every_item_stops_after_a_few(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=2)
    write_questions(root, 30)
    message = b'{"error": {"message": "parent-model is not a valid model ID"}}'
    async with open_stub(lambda _: Reply(status=400, body=message)) as stub:
        result = await overbrainer(root, "answers", url=stub.url)
        asked = len(stub.completions)
    assert result.code == 1
    assert 3 <= asked <= 4  # the third failure stops it; at most one more was in flight
    assert last_line(result.stderr) == (
        "error: answers stopped: HTTP 400: parent-model is not a valid model ID "
        "(the same for 3 items in a row)"
    )
    [line] = history(root)
    assert (line.status, line.failed) == (HistoryStatus.FAILED, asked)


async def test_a_401_midway_keeps_every_answer_received_and_sends_nothing_after(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", concurrency=3, pipeline=FIXED_CONCURRENCY)
    questions = write_questions(root, 9)
    first, second, refused = (q.text for q in questions[:3])

    def reply(request: Recorded) -> Reply:
        if request.prompt == refused:
            return Reply(status=401, delay=0.3)
        if request.prompt in (first, second):  # in flight when the 401 comes, answered after
            return answering(0.6)(request)
        return answering(5.0)(request)  # never asked, or the test fails

    async with open_stub(reply) as stub:
        result = await overbrainer(root, "answers", url=stub.url)
        prompts = completion_prompts(stub)
    assert result.code == 1
    assert sorted(prompts) == sorted([first, second, refused])
    assert last_line(result.stderr) == (
        "error: answers stopped: HTTP 401: authentication failed, check the provider API key"
    )
    assert sorted(e.messages[0].content for e in read_examples(root)) == sorted([first, second])
    assert result.out_lines == [
        "answers: 2 done, 0 skipped, 0 failed, 0 excluded; tokens 200 in, 100 out; cost unknown"
    ]
    [line] = history(root)  # a fatal error is the stage's failure, not the item's (the spec)
    assert (line.status, line.done, line.failed) == (HistoryStatus.FAILED, 2, 0)


async def test_a_401_on_a_list_request_sends_nothing_after_it(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub(lambda _: Reply(status=401)) as stub:
        result = await overbrainer(root, "subtopics", url=stub.url)
        asked = len(stub.completions)
    assert asked == 1
    assert result.code == 1
    assert last_line(result.stderr) == (
        "error: subtopics stopped: HTTP 401: authentication failed, check the provider API key"
    )


async def test_a_400_that_refuses_the_key_stops_a_list_request_without_asking_again(
    tmp_path: Path,
) -> None:
    # LiteLLM's proxy without a database answers any key but its master key this way; before,
    # the list was asked again without structured output, paying for a request that could not
    # work, and the stage went on item after item.
    root = make_project(tmp_path / "p")
    no_db = b'{"error": {"message": "No connected db.", "type": "no_db_connection"}}'
    async with open_stub(lambda _: Reply(status=400, body=no_db)) as stub:
        result = await overbrainer(root, "subtopics", url=stub.url)
        asked = len(stub.completions)
    assert asked == 1
    assert result.code == 1
    assert "retrying without structured output" not in result.stderr
    assert last_line(result.stderr) == "error: subtopics stopped: HTTP 400: No connected db."


async def test_without_retries_a_refused_connection_names_its_cause(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    env = {"OVERBRAINER_PIPELINE__MAX_RETRIES": "0"}
    result = await overbrainer(root, "subtopics", "--topic", "ownership", url=url, env=env)
    assert result.code == 1
    assert f"cannot connect to 127.0.0.1:{port}: connection refused" in result.stderr
    assert "no list of strings" not in result.stderr
    assert last_line(result.stderr) == (
        "error: 1 subtopics item(s) failed; run the command again to retry them"
    )
