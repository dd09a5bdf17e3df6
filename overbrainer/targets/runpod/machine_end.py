"""What guards a job's pod while it is followed (its log, spend, disk, lease and deadline, cost
cap: §7.6) and how the pod is released by the way its job ended."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import trio

from overbrainer.model.errors import OverbrainerError
from overbrainer.model.pod_status import DeleteReason
from overbrainer.model.utc import rfc3339
from overbrainer.targets.executor import Executor
from overbrainer.targets.machine import Ended, Ending, Limit
from overbrainer.targets.runpod.cost import cost_cap, guard_cost, publish_spend
from overbrainer.targets.runpod.disk import DiskPolicy, follow_disk
from overbrainer.targets.runpod.errors import RunpodError
from overbrainer.targets.runpod.lease import (
    DEADLINE_MESSAGE,
    LeaseTimes,
    Pace,
    keep_lease,
    watch_pace,
)
from overbrainer.targets.runpod.pod_delete import forget_keys, remove
from overbrainer.targets.runpod.pod_end import (
    DRAIN_LIMIT,
    END_BOUND,
    capture_pod_log,
    clean_up,
    drain_pod_log,
    end_pod_bounded,
    error_text,
)
from overbrainer.targets.runpod.pod_record import DeletedBy, PodState
from overbrainer.targets.runpod.pod_run import D, JobPod, PodRun, R, pod_poll

log = logging.getLogger(__name__)

GONE_BOUND = 120.0
"""Seconds spent at most telling whether the pod of an unreachable job is gone."""
COST_CAP_MESSAGE = "max_cost_usd reached: the pod was deleted before the job ended"

LIMIT_REASONS = {Ending.COST_CAP: DeleteReason.COST_CAP, Ending.DEADLINE: DeleteReason.DEADLINE}


async def guard_pod(
    run: PodRun[D, R], executor: Executor, tripped: Callable[[Limit], None]
) -> None:
    """Until cancelled: keep the pod's log here, tell its spend, watch its disk; unless kept,
    hold the lease and watch the pace to the deadline; watch the cost cap. `tripped` is told
    when the deadline or the cap passes (the caller stops following and ends the pod)."""
    limits = cost_cap(run.pod)
    deadline = None if run.keep else run.pod.deadline_unix
    capped = trio.Event()
    deadline_passed = trio.Event()

    async def trip_at(event: trio.Event, limit: Limit) -> None:
        await event.wait()
        tripped(limit)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(capture_pod_log, run)
        nursery.start_soon(publish_spend, run.bus, run.pod)
        nursery.start_soon(
            follow_disk,
            executor,
            run.remote_dir,
            DiskPolicy.from_env(),
            run.api,
            run.pod.network_volume_id,
            run.pod.max_volume_gb,
        )
        if not run.keep:
            pace = Pace()
            nursery.start_soon(watch_pace, run.bus, pace, deadline, run.pod.deadline or "?")
            nursery.start_soon(
                keep_lease,
                executor,
                run.remote_dir,
                pace,
                deadline,
                deadline_passed,
                LeaseTimes.from_env(),
            )
            nursery.start_soon(trip_at, deadline_passed, Limit(Ending.DEADLINE, DEADLINE_MESSAGE))
        if limits is not None:
            nursery.start_soon(guard_cost, limits, run.remote_dir, executor, capped)
            nursery.start_soon(trip_at, capped, Limit(Ending.COST_CAP, COST_CAP_MESSAGE))


async def end_machine(run: JobPod, executor: Executor, ended: Ended) -> str | None:
    """Release the pod as its job ended: the problem to report (None: all is well). For a
    lost job, the message its record fails with when the pod is gone (None: it is still
    there)."""
    ending = ended.ending
    if ending is Ending.DONE:
        return await end_pod_bounded(run, executor, retrieved=ended.retrieved)
    if ending is Ending.LOST:
        return await _after_lost_job(run, ended.why)
    if ending in LIMIT_REASONS:
        await _delete_at_limit(run, LIMIT_REASONS[ending])
        return None
    if ending is not Ending.NOT_STARTED and run.keep:
        return None
    # INTERRUPTED comes once the job started (a Ctrl-C before it is the opening's, which
    # deletes the pod as `interrupted before the job started` itself): the job was cancelled.
    reasons = {
        Ending.NOT_STARTED: DeleteReason.NOT_READY,
        Ending.INTERRUPTED: DeleteReason.CANCELLED,
        Ending.CANCELLED: DeleteReason.CANCELLED,
    }
    left = await clean_up(run, reasons[ending])
    return "a pod of it may be left: check `overbrainer pod ls`" if left else None


async def abandon_pod(run: JobPod) -> None:
    """A job that could not be followed to its end: its pod deleted, unless kept."""
    if not run.keep:
        await clean_up(run, DeleteReason.UNFOLLOWED)


async def _after_lost_job(run: JobPod, why: str) -> str | None:
    """The job could not be reached: when Runpod no longer has the pod (its watchdog or
    someone deleted it), the message its record fails with, naming the limit that passed if
    one did (§7.6). None when the pod is still there (the error stands: attach again)."""
    pod_id = run.pod.live_pod
    if pod_id is None:
        return None
    gone = False
    with trio.move_on_after(GONE_BOUND):
        try:
            gone = await run.api.pod_gone(pod_id, interval=2 * pod_poll())
        except RunpodError as checking:
            log.debug("pod: cannot tell whether pod %s is gone: %s", pod_id, checking.message)
    if not gone:
        return None
    now = time.time()
    limits = cost_cap(run.pod)
    deadline = None if run.keep else run.pod.deadline_unix
    by = DeletedBy.WATCHDOG
    if limits is not None and now >= limits.delete_at:
        message = COST_CAP_MESSAGE
    elif deadline is not None and now >= deadline:
        message = DEADLINE_MESSAGE
    else:
        message, by = f"pod {pod_id} no longer exists", DeletedBy.UNKNOWN
    log.warning("pod: %s is no longer on Runpod (%s)", pod_id, why)
    with trio.move_on_after(END_BOUND, shield=True):
        await run.save(state=PodState.DELETED, deleted_at=rfc3339(), deleted_by=by)
        await forget_keys(run)
    return message


async def _delete_at_limit(run: JobPod, reason: DeleteReason) -> None:
    """The cost cap or `max_hours` passed while following: delete the pod (shielded)."""
    with trio.move_on_after(END_BOUND, shield=True):
        with trio.move_on_after(DRAIN_LIMIT):
            await drain_pod_log(run)
        try:
            await remove(run, reason)
        except (OverbrainerError, OSError) as error:
            log.warning("cannot delete the pod of %s: %s", run.subject, error_text(error))
        else:
            await forget_keys(run)
