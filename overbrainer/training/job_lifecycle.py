"""The one job lifecycle (issue 42): open a machine, start the job shielded and bounded,
follow it beside the machine's guards raced against Ctrl-C, fetch, conclude, end the machine.

Every job kind (train, compare, export) on every machine (local, ssh, a pod, a cluster) runs
through `run_job`; `train attach|stop` reach a recorded job's machine and run `follow_to_end`.
"""

from __future__ import annotations

import logging
from typing import TypeVar

import attrs
import trio

from overbrainer.events.bus import EventBus
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.error_groups import unwrapped
from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.model.job_status import Exited, JobStatus
from overbrainer.targets import Claim, Ended, Ending, JobOpening, Limit, Machine, MachineKind
from overbrainer.training.follow_job import (
    CANCEL_BOUND,
    FollowError,
    MetricsTail,
    follow,
    guard_stop,
)
from overbrainer.training.job_kind import FollowedKind, Interruption, JobKind, Started
from overbrainer.training.summary import MetricsSummary

log = logging.getLogger(__name__)

Result = TypeVar("Result")

FIRST = (Ending.COST_CAP, Ending.DEADLINE)
"""Which tripped guard a record names when several trip at once."""


async def run_job(job: JobKind[Result], kind: MachineKind, opening: JobOpening) -> Result:
    """Run one job on a machine of `kind`, from its record to how it ended.

    `opening` names the target and carries the bus and interrupt; its `create`, `needs` and
    `interrupted` are the job kind's. Ctrl-C before the job started ends the machine and
    raises `job.interrupted_before()`; while following, `job.on_interrupt` decides.
    """
    created: list[str] = []

    async def create(workdir: str, claim: Claim | None) -> str:
        job_id = await job.create(workdir, claim)
        created.append(job_id)
        return job_id

    async def fail(message: str) -> None:
        await job.fail(created[0], message)

    opening = attrs.evolve(
        opening, create=create, needs=job.needs, interrupted=job.interrupted_before, fail=fail
    )
    async with kind.open(opening) as machine:
        assert len(created) == 1, "a kind makes the job's record exactly once"
        started: Started | None = None
        try:
            with trio.move_on_after(job.start_bound(machine), shield=True):
                started = await job.start(machine, created[0])
        except BaseException:
            await machine.end(Ended(Ending.NOT_STARTED))
            raise
        if started is None:
            error = await job.not_started(created[0])
            await machine.end(Ended(Ending.NOT_STARTED))
            raise error
        return await follow_to_end(job, machine, started, opening.bus, opening.interrupt)


async def follow_to_end(
    job: FollowedKind[Result],
    machine: Machine,
    started: Started,
    bus: EventBus,
    interrupt: Interrupt,
    *,
    requested: bool = False,
) -> Result:
    """Follow a started job beside the machine's guards, raced against Ctrl-C; then fetch its
    artifacts, conclude it and end the machine. `requested`: a snapshot request was just
    written (the stop's limits run from now)."""
    tail = MetricsTail(MetricsSummary())
    limits: list[Limit] = []
    try:
        status = await interrupt.race(
            lambda: _watch(job, machine, started, bus, tail, limits, requested=requested)
        )
    except FollowError as lost:
        # The job could not be reached for the whole budget: the machine decides what a lost
        # job means (a pod: is it gone, did a limit delete it?). A message: it is gone.
        if job.on_interrupt is Interruption.CANCEL:
            await cancel_job(machine, started)
        gone = await machine.end(Ended(Ending.LOST, why=lost.message))
        if gone is None:
            if started.disposable:
                _left(started, await machine.end(Ended(Ending.DONE, retrieved=True)))
            raise
        await job.fail(started.record.id, gone)
        raise WorkFailed(f"{started.subject} failed: {gone}") from None
    except BaseException:
        # Cancelled from outside: a job that must not outlive its command is cancelled.
        if job.on_interrupt is Interruption.CANCEL:
            await cancel_job(machine, started)
            await machine.end(Ended(Ending.INTERRUPTED))
        raise
    if status is None and not limits:
        if job.on_interrupt is Interruption.DETACH:
            # The machine's words when it has its own (a pod: its price, its watchdog).
            raise await machine.detach() or await job.interrupted(machine, started)
        await cancel_job(machine, started)
        await machine.end(Ended(Ending.INTERRUPTED))
        raise await job.interrupted(machine, started)
    if status is None:
        limit = min(limits, key=lambda t: FIRST.index(t.ending) if t.ending in FIRST else 9)
        await machine.end(Ended(limit.ending))
        await job.fail(started.record.id, limit.message)
        raise WorkFailed(f"{started.subject} failed: {limit.message}")
    return await _finish(job, machine, started, status, tail.summary)


async def _finish(
    job: FollowedKind[Result],
    machine: Machine,
    started: Started,
    status: JobStatus,
    summary: MetricsSummary,
) -> Result:
    """Fetch, conclude, then end the machine (whatever the conclusion raised)."""
    ended = Ended(Ending.DONE, succeeded=status == Exited(0), retrieved=started.disposable)
    try:
        problem = await job.fetch(machine, started, status)
        ended = attrs.evolve(ended, retrieved=started.disposable or problem is None)
        result = await job.conclude(machine, started, status, summary, problem)
    except BaseException:
        _left(started, await machine.end(ended))
        raise
    left = await machine.end(ended)
    if left is not None and job.end_fails:
        raise WorkFailed(f"{started.subject} ended, but {left}")
    _left(started, left)
    return result


def _left(started: Started, left: str | None) -> None:
    """Warn of a machine its job's end did not end (`left`: the machine's words)."""
    if left is not None:
        log.warning("%s ended, but %s", started.subject, left)


async def _watch(
    job: FollowedKind[Result],
    machine: Machine,
    started: Started,
    bus: EventBus,
    tail: MetricsTail,
    limits: list[Limit],
    *,
    requested: bool,
) -> JobStatus | None:
    """The follow beside the machine's guards (and a training job's stop guard); None when a
    guard tripped."""
    followed = machine.followed(started.job)
    sampler = machine.sampler(started.job) if job.sampled else None
    status: JobStatus | None = None
    async with unwrapped(), trio.open_nursery() as nursery:

        def tripped(limit: Limit) -> None:
            limits.append(limit)
            nursery.cancel_scope.cancel()

        nursery.start_soon(machine.guard, tripped)
        if started.record.snapshots:
            nursery.start_soon(lambda: guard_stop(followed, times=job.times, requested=requested))
        status = await follow(
            followed,
            bus,
            tail,
            run_id=started.record.id,
            times=job.times,
            sampler=sampler,
            kind=job.type,
        )
        nursery.cancel_scope.cancel()
    return status


async def cancel_job(machine: Machine, started: Started) -> None:
    """Cancel the job (bounded, shielded); a failure is a warning."""
    with trio.move_on_after(CANCEL_BOUND, shield=True):
        try:
            await machine.followed(started.job).cancel()
        except (OSError, OverbrainerError) as error:
            log.warning("cannot cancel %s: %s", started.subject, error)
