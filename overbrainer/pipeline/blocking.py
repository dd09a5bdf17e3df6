"""The stages' file work, run in worker threads so the event loop never waits on the disk.

Reading 100,000 stored answers takes over a second; on the loop, Ctrl-C, metric scrapes
and progress would wait that long. `storage/` stays synchronous: these wrappers are where
the stages call it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TypeVar

import trio

from overbrainer.model.error_groups import unwrapped
from overbrainer.storage import Appender, open_file_appender

log = logging.getLogger(__name__)

T = TypeVar("T")

CLOSE_BOUND = 10.0
"""Seconds a cancelled stage waits for its appender's fsync before leaving it to its thread."""


SLOW_READ_S = 3.0
"""Seconds of reading after which the command says it is still reading (then every
`SLOW_READ_EVERY_S`): a no-op stage on ten million answers reads for about a minute."""
SLOW_READ_EVERY_S = 15.0


async def read_in_thread(read: Callable[[], T]) -> T:
    """`read()` in a worker thread; on cancel the thread is left to finish and its result
    dropped, which is safe because it changes nothing on disk. A long `read` calls
    `stop_if_cancelled` as it goes, so that a left thread stops too, not only its wait.
    A read past `SLOW_READ_S` is logged, so a big project's silence has a reason."""
    async with unwrapped(), trio.open_nursery() as nursery:
        nursery.start_soon(_say_still_reading, trio.current_time())
        result = await trio.to_thread.run_sync(read, abandon_on_cancel=True)
        nursery.cancel_scope.cancel()
    return result


async def _say_still_reading(started: float) -> None:
    await trio.sleep(SLOW_READ_S)
    while True:
        log.info(
            "still reading the project's data files (%.0f s; Ctrl-C stops it)",
            trio.current_time() - started,
        )
        await trio.sleep(SLOW_READ_EVERY_S)


async def write_in_thread(write: Callable[[], T]) -> T:
    """`write()` in a worker thread, always waited for: a rewrite left running would race
    with whatever the stage does next to the same file. A long `write` calls
    `stop_if_cancelled` as it goes (before it replaces anything), so Ctrl-C ends it."""
    return await trio.to_thread.run_sync(write)


def stop_if_cancelled() -> None:
    """In the thread of `read_in_thread` or `write_in_thread`: raise `trio.Cancelled` once the
    stage waiting for it is cancelled, so the thread stops rather than runs on for minutes."""
    trio.from_thread.check_cancelled()


@contextlib.asynccontextmanager
async def appending(path: Path) -> AsyncIterator[Appender]:
    """`open_appender` with its open (tail repair) and close (fsync) off the event loop.

    Appends stay on the loop: each is one unbuffered `write` of one short line, cheaper
    than a trip to a thread. When the stage ends early (an error, a cancel) the close is
    shielded and bounded, so the records stored so far are still synced but a hung disk
    cannot hold the command; they are already written, so a close left to its thread loses
    nothing but the wait for durability.
    """
    appender = await write_in_thread(lambda: open_file_appender(path))
    try:
        yield appender
    except BaseException:
        with trio.move_on_after(CLOSE_BOUND, shield=True) as bound:
            await trio.to_thread.run_sync(appender.close, abandon_on_cancel=True)
        if bound.cancelled_caught:
            log.warning("%s: not synced to disk within %gs; left to finish", path, CLOSE_BOUND)
        raise
    await write_in_thread(appender.close)
