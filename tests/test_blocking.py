"""The stages' reads in worker threads: a long one says so, errors come out as themselves."""

from __future__ import annotations

import logging
import threading

import pytest
import trio
import trio.testing

from overbrainer.pipeline import blocking
from overbrainer.pipeline.blocking import read_in_thread
from overbrainer.storage import DataError

STILL = "still reading the project's data files"


class _Said(logging.Handler):
    """Sets `enough` once `count` lines saying the read goes on were logged."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count
        self.lines: list[str] = []
        self.enough = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        if sum(STILL in line for line in self.lines) >= self.count:
            self.enough.set()


async def test_a_long_read_says_it_is_still_reading(
    autojump_clock: trio.testing.MockClock,
) -> None:
    said = _Said(count=2)
    logger = logging.getLogger(blocking.__name__)
    logger.addHandler(said)
    logger.setLevel(logging.INFO)
    try:
        # The read ends only once two notices came: at 3 s, then 15 s later (virtual time).
        assert await read_in_thread(lambda: said.enough.wait(60)) is True
    finally:
        logger.removeHandler(said)
    # Virtual time may run on while the thread's result comes back: more notices, never fewer.
    assert said.lines[:2] == [
        f"{STILL} (3 s; Ctrl-C stops it)",
        f"{STILL} (18 s; Ctrl-C stops it)",
    ]
    assert all(STILL in line for line in said.lines)


async def test_a_quick_read_says_nothing_and_its_error_comes_out_as_itself(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    assert await read_in_thread(lambda: 7) == 7

    def broken() -> None:
        raise DataError("cannot access data/answers.jsonl", "Is a directory")

    with pytest.raises(DataError, match="cannot access"):
        await read_in_thread(broken)
    assert not [line for line in caplog.messages if STILL in line]
