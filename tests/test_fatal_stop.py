"""A fatal error (HTTP 401-404) stops the stage, as the reference's spec says: the items it
refused are not counted failed (only a non-fatal final error gives `failed += 1`), the
requests in flight that get it too are not either, and an answer in flight is still saved."""

from __future__ import annotations

from pathlib import Path

import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.storage.history import HistoryStatus
from tests.pipeline_support import (
    FIXED_CONCURRENCY,
    history,
    make_project,
    overbrainer,
    read_examples,
    write_questions,
)

STOPPED = "error: answers stopped: HTTP 401: authentication failed, check the provider API key"


async def test_401s_in_flight_are_the_stages_failure_not_the_items(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=3, pipeline=FIXED_CONCURRENCY)
    # Exactly the three in flight: had there been more, the answer could land before the 401s
    # and free a slot for a fourth request, a legitimate order on a busy machine.
    # (test_answers_command checks that nothing new is sent after a 401.)
    questions = write_questions(root, 3)
    arrived = 0
    all_in = trio.Event()

    async def reply(request: Recorded) -> Reply:
        nonlocal arrived
        arrived += 1
        if arrived == 3:
            all_in.set()
        # The three first requests are all in flight before any answers: two get 401, one an
        # answer (paid for, so it is saved).
        await all_in.wait()
        if request.prompt == questions[1].text:
            return Reply(content="kept", reasoning="r", usage=(100, 50))
        return Reply(status=401, content="bad key")

    async with open_stub(reply) as stub:
        result = await overbrainer(root, "answers", url=stub.url)
        assert len(stub.completions) == 3
    assert result.code == 1, result.stderr
    assert result.out_lines == [
        "answers: 1 done, 0 skipped, 0 failed, 0 excluded; tokens 100 in, 50 out; cost unknown"
    ]
    assert result.stderr.strip().splitlines()[-1] == STOPPED
    assert [e.id for e in read_examples(root)] == [questions[1].id]
    [line] = history(root)
    assert (line.status, line.done, line.failed) == (HistoryStatus.FAILED, 1, 0)


async def test_a_repeated_client_error_still_counts_its_items(tmp_path: Path) -> None:
    # Not fatal in the spec (a 400 fails one item): the stop after 3 in a row is ours, and the
    # three items it refused count as failed, as the reference would count them.
    root = make_project(tmp_path / "p", concurrency=1)
    write_questions(root, 5)
    async with open_stub(lambda _: Reply(status=400, content="bad model")) as stub:
        result = await overbrainer(root, "answers", url=stub.url)
    assert result.code == 1, result.stderr
    assert result.out_lines[0].startswith("answers: 0 done, 0 skipped, 3 failed, 0 excluded")
