"""Following a job beside its machine's guards (§7.6), raced against Ctrl-C: a guard that
trips ends the machine and fails the record; a job lost while its machine is gone fails it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import attrs
import trio

from overbrainer.events.interrupt import Interrupt
from overbrainer.model.error_groups import error_leaves, unwrapped
from overbrainer.model.errors import WorkFailed
from overbrainer.targets import Ended, Ending, Limit, Machine
from overbrainer.training.follow_job import FollowError
from overbrainer.training.run_store import RunRecord, Runs, RunState

T = TypeVar("T")

RECORD_BOUND = 30.0
"""Seconds a shielded write of a failed record may take."""

RecordFail = Callable[[str], Awaitable[None]]
"""Record the job failed with this message."""

FIRST = (Ending.COST_CAP, Ending.DEADLINE)
"""Which tripped guard a record names when several trip at once."""


def failing(runs: Runs, record: RunRecord, *, update: bool = False) -> RecordFail:
    """Save `record` failed with a message (shielded): saved as is, or, with `update`, put in
    place of whatever its run.json says under the run's lock."""

    async def fail(message: str) -> None:
        failed = attrs.evolve(record, state=RunState.FAILED, message=message)
        with trio.move_on_after(RECORD_BOUND, shield=True):
            if update:
                await trio.to_thread.run_sync(lambda: runs.update(record.id, lambda _: failed))
            else:
                await trio.to_thread.run_sync(runs.save, failed)

    return fail


async def follow_guarded(
    interrupt: Interrupt,
    machine: Machine,
    watch: Callable[[], Awaitable[T]],
    fail: RecordFail,
    subject: str,
) -> T | None:
    """`watch` raced against Ctrl-C (None), beside the machine's guards. A guard that trips
    stops the watch, ends the machine and fails the record (`fail`); a job that cannot be
    reached while its machine is gone fails it too. `subject` names the job (`run <id>`)."""
    tripped: list[Limit] = []

    async def follow() -> T | None:
        async with unwrapped(), trio.open_nursery() as nursery:

            def trip(limit: Limit) -> None:
                tripped.append(limit)
                nursery.cancel_scope.cancel()

            nursery.start_soon(machine.guard, trip)
            ended = await watch()
            nursery.cancel_scope.cancel()
            return ended
        return None  # a guard cancelled the watch

    try:
        followed = await interrupt.race(follow)
    except (FollowError, BaseExceptionGroup) as error:
        lost = next((e for e in error_leaves(error) if isinstance(e, FollowError)), None)
        if lost is not None:
            message = await machine.end(Ended(Ending.LOST, why=lost.message))
            if message is not None:
                await fail(message)
                raise WorkFailed(f"{subject} failed: {message}") from None
        raise
    if tripped:
        limit = min(tripped, key=lambda t: FIRST.index(t.ending) if t.ending in FIRST else 9)
        await machine.end(Ended(limit.ending))
        await fail(limit.message)
        raise WorkFailed(f"{subject} failed: {limit.message}")
    return followed
