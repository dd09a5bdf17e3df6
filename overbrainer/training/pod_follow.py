"""Following a run's job on its pod (§7.6): raced against Ctrl-C beside what guards the pod (its
log, disk, lease and deadline, cost cap, spend), then the pod's shielded end."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import attrs
import trio

from overbrainer.events.interrupt import Interrupt
from overbrainer.model.error_groups import error_leaves, unwrapped
from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.model.pod_status import DeleteReason
from overbrainer.targets import (
    DEADLINE_MESSAGE,
    DRAIN_LIMIT,
    END_BOUND,
    DeletedBy,
    DiskPolicy,
    Executor,
    LeaseTimes,
    Pace,
    PodState,
    RunpodError,
    capture_pod_log,
    cost_cap,
    drain_pod_log,
    end_pod_bounded,
    error_text,
    follow_disk,
    forget_keys,
    guard_cost,
    keep_lease,
    pod_poll,
    publish_spend,
    remove,
    watch_pace,
)
from overbrainer.training.follow_job import FollowError
from overbrainer.training.follow_run import watch
from overbrainer.training.outcome import Outcome
from overbrainer.training.run_pod import RunPod, pod_detached
from overbrainer.training.run_store import RunRecord, RunState, rfc3339
from overbrainer.training.session import Session

log = logging.getLogger(__name__)

T = TypeVar("T")

GONE_BOUND = 120.0
"""Seconds spent at most telling whether the pod of an unreachable job is gone."""


async def follow_and_end(
    session: Session,
    run: RunPod,
    executor: Executor,
    record: RunRecord,
    *,
    requested: bool = False,
) -> Outcome:
    """The raced follow (Ctrl-C detaches), then the shielded end of the pod (§7.6)."""
    followed = await follow_on_pod(
        session.interrupt,
        run,
        executor,
        record,
        lambda: watch(session, executor, record, requested=requested),
    )
    if followed is None:
        raise pod_detached(run)
    outcome = followed
    problem = await end_pod_bounded(run, executor, retrieved=outcome.retrieved)
    if problem is not None:
        raise WorkFailed(f"run {run.run_id} ended, but not its pod: {problem}")
    return outcome


async def follow_on_pod(
    interrupt: Interrupt,
    run: RunPod,
    executor: Executor,
    record: RunRecord,
    watch_job: Callable[[], Awaitable[T]],
) -> T | None:
    """`watch_job` raced against Ctrl-C (None), beside what guards the pod meanwhile: its log,
    its disk, the lease and deadline, the cost cap, its spend told as events. A limit that
    passes deletes the pod and fails the record; a job that cannot be reached while the pod is
    gone fails it too."""
    capped = trio.Event()
    deadline_passed = trio.Event()
    limits = cost_cap(run.pod)
    deadline = None if run.keep else run.pod.deadline_unix

    async def follow() -> T | None:
        async with unwrapped(), trio.open_nursery() as nursery:

            async def stop_at(limit: trio.Event) -> None:
                await limit.wait()
                nursery.cancel_scope.cancel()

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
                nursery.start_soon(stop_at, deadline_passed)
            if limits is not None:
                nursery.start_soon(guard_cost, limits, run.remote_dir, executor, capped)
                nursery.start_soon(stop_at, capped)
            ended = await watch_job()
            nursery.cancel_scope.cancel()
            return ended
        return None  # a limit cancelled the watch

    try:
        followed = await interrupt.race(follow)
    except (FollowError, BaseExceptionGroup) as error:
        lost = next((e for e in error_leaves(error) if isinstance(e, FollowError)), None)
        if lost is not None:
            await _after_lost_job(run, record, lost)
        raise
    if capped.is_set():
        await _delete_at_limit(run, record, DeleteReason.COST_CAP, COST_CAP_MESSAGE)
    if deadline_passed.is_set():
        await _delete_at_limit(run, record, DeleteReason.DEADLINE, DEADLINE_MESSAGE)
    return followed


COST_CAP_MESSAGE = "max_cost_usd reached: the pod was deleted before the job ended"


async def _after_lost_job(run: RunPod, record: RunRecord, error: FollowError) -> None:
    """The job could not be reached: when Runpod no longer has the pod (its watchdog or
    someone deleted it), the run failed, with the limit that passed if one did (§7.6).
    Returns when the pod is still there (the error stands: attach again)."""
    pod_id = run.pod.live_pod
    if pod_id is None:
        return
    gone = False
    with trio.move_on_after(GONE_BOUND):
        try:
            gone = await run.api.pod_gone(pod_id, interval=2 * pod_poll())
        except RunpodError as checking:
            log.debug("pod: cannot tell whether pod %s is gone: %s", pod_id, checking.message)
    if not gone:
        return
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
    log.warning("pod: %s is no longer on Runpod (%s)", pod_id, error.message)
    with trio.move_on_after(END_BOUND, shield=True):
        await run.save(state=PodState.DELETED, deleted_at=rfc3339(), deleted_by=by)
        await forget_keys(run)
        failed = attrs.evolve(record, state=RunState.FAILED, message=message)
        await trio.to_thread.run_sync(lambda: run.runs.update(run.run_id, lambda _: failed))
    raise WorkFailed(f"{run.subject} failed: {message}") from None


async def _delete_at_limit(
    run: RunPod, record: RunRecord, reason: DeleteReason, message: str
) -> None:
    """The cost cap or `max_hours` passed while following: delete the pod, fail the run
    (shielded)."""
    with trio.move_on_after(END_BOUND, shield=True):
        with trio.move_on_after(DRAIN_LIMIT):
            await drain_pod_log(run)
        try:
            await remove(run, reason)
        except (OverbrainerError, OSError) as error:
            log.warning("cannot delete the pod of %s: %s", run.subject, error_text(error))
        else:
            await forget_keys(run)
    failed = attrs.evolve(record, state=RunState.FAILED, message=message)
    with trio.move_on_after(30, shield=True):
        await trio.to_thread.run_sync(lambda: run.runs.update(run.run_id, lambda _: failed))
    raise WorkFailed(f"{run.subject} failed: {message}")
