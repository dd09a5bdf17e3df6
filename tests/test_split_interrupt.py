"""Ctrl-C and SIGTERM during `split`'s near-duplicate clustering: the command stops within
seconds, leaves train and eval as they were and exits 130; and the worker thread itself stops
(issue 41: at 10M answers the clustering ran on for seconds after the stage had left)."""

from __future__ import annotations

import random
import signal
import threading
from pathlib import Path

import pytest
import trio

from overbrainer.pipeline import split_stage
from overbrainer.pipeline.blocking import read_in_thread
from tests.pipeline_support import make_project, start, wait_until, write_answered

ANSWERS = 30_000
"""Questions of twelve words drawn from twenty: each of their bigrams is in hundreds of other
questions, so grouping them visits the most texts a probe may (the cap) for nearly every
question: tens of seconds of CPU."""
WORDS = [f"word{n}" for n in range(20)]


def drawn_question(number: int) -> str:
    draw = random.Random(number)
    return " ".join(draw.choice(WORDS) for _ in range(12)) + f" case {number}?"


GROUPING = "split: grouping"
PROMPT = 10.0
"""Seconds the command may take to end after the signal, on a loaded machine."""


def data_files(root: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted((root / "data").iterdir())}


def project_with_a_split(root: Path) -> dict[str, bytes]:
    """A project of slow-to-cluster answers and an earlier split's files; those files."""
    make_project(root)
    write_answered(root, ANSWERS, text_of=drawn_question)
    (root / "data" / "train.jsonl").write_text("an earlier split's train\n")
    return data_files(root)


@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["sigint", "sigterm", "kill-9"]
)
async def test_a_signal_during_the_clustering_stops_split_leaving_the_files_as_they_were(
    tmp_path: Path, signum: signal.Signals
) -> None:
    root = tmp_path / "p"
    before = project_with_a_split(root)
    async with trio.open_nursery() as nursery:
        process = await start(nursery, root, "split", url="http://127.0.0.1:9")
        await wait_until(lambda: GROUPING in (root / "stderr.txt").read_text())
        assert process.poll() is None, "split ended before the signal: make the corpus slower"
        process.send_signal(signum)
        with trio.fail_after(PROMPT):
            code = await process.wait()
    assert data_files(root) == before
    if signum == signal.SIGKILL:
        assert code == -signal.SIGKILL
        return
    stderr = (root / "stderr.txt").read_text()
    assert code == 130, stderr
    assert "Traceback" not in stderr
    assert "split: writing" not in stderr


async def test_a_cancelled_read_stops_its_thread_too(tmp_path: Path) -> None:
    """`read_in_thread` leaves its thread on cancel; the thread stops itself at its next
    look (`CHECK_EVERY` lines) instead of reading the whole file."""
    path = tmp_path / "lines.jsonl"
    lines = 5 * split_stage.CHECK_EVERY
    path.write_text('{"n": 1}\n' * lines)
    visited: list[int] = []
    ended = threading.Event()

    with trio.CancelScope() as scope:

        def visit(_line: str, start: int, _length: int) -> None:
            if not visited:
                trio.from_thread.run_sync(scope.cancel)
            visited.append(start)

        def read() -> None:
            try:
                split_stage._each_line(path, visit)
            finally:
                ended.set()

        await read_in_thread(read)
    await trio.to_thread.run_sync(ended.wait, 60)
    assert ended.is_set()
    assert 1 <= len(visited) <= split_stage.CHECK_EVERY
