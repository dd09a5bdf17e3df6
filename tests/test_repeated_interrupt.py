"""Ctrl-C pressed again and again while the command exits: whatever it is doing then, the
process ends by itself with 130 and no traceback, never killed by SIGINT."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.storage.history import HistoryStatus
from tests.pipeline_support import (
    history,
    make_project,
    read_examples,
    start,
    wait_until,
    write_questions,
)


def slow(request: Recorded) -> Reply:
    return Reply(content="An answer", reasoning="thinking", usage=(100, 50), delay=0.3)


@pytest.mark.parametrize("every", [0.0005, 0.002, 0.01])
async def test_ctrl_c_again_and_again_during_the_exit_still_exits_130(
    tmp_path: Path, every: float
) -> None:
    root = make_project(tmp_path / "p", concurrency=3)
    write_questions(root, 30)
    async with open_stub(slow) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "answers", url=stub.url)
        await wait_until(lambda: len(read_examples(root)) >= 3)
        # The first starts the orderly exit; the rest land in every part of it, to the end.
        with trio.fail_after(20):
            while process.poll() is None:
                process.send_signal(signal.SIGINT)
                await trio.sleep(every)
        code = await process.wait()
        nursery.cancel_scope.cancel()
    stderr = (root / "stderr.txt").read_text()
    assert "Traceback" not in stderr, stderr
    assert code == 130, stderr
    assert stderr.strip().splitlines()[-1] == "interrupted: the stage resumes on its next run"
    [line] = history(root)
    assert line.status is HistoryStatus.INTERRUPTED
