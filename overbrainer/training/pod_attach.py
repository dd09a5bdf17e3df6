"""`train attach`, `stop` and `cancel` of a Runpod run (§7.8): what training adds to reaching
its pod again (targets/runpod/reach.py): the run's state checks, and the run failed when its
pod is gone."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

import attrs
import trio

from overbrainer.config.target_settings import TargetSettings
from overbrainer.model.errors import OverbrainerError, UsageError, WorkFailed
from overbrainer.targets import (
    PodGone,
    PodMachine,
    RecordedJob,
    load_pod_record,
    pod_record_of,
    reach_pod_machine,
)
from overbrainer.training.follow_run import summarize
from overbrainer.training.outcome import Outcome
from overbrainer.training.pod_train import follow_and_end
from overbrainer.training.run_store import RunRecord, RunState
from overbrainer.training.session import Session, not_started
from overbrainer.training.train_job import job_ref


def recorded_job(session: Session, record: RunRecord, target: TargetSettings) -> RecordedJob:
    """The run as its kind reaches it again."""
    return RecordedJob(
        record.target,
        target,
        job_ref(record),
        session.runs.dir_of(record.id),
        session.bus,
        session.interrupt,
        not_started,
        settings=session.settings,
    )


async def attach_pod(session: Session, record: RunRecord, target: TargetSettings) -> Outcome:
    """`train attach` of a Runpod run (§7.8): reach its pod again, follow, then end the pod."""
    if record.job is None and record.state is RunState.PREPARING:
        raise WorkFailed(
            f"run {record.id} has no job yet: its pod is still starting, or it stopped before "
            "its job started"
        )
    if record.state is not RunState.RUNNING or record.job is None:
        return await summarize(session, record)
    recorded = await trio.to_thread.run_sync(load_pod_record, session.runs.dir_of(record.id))
    if recorded is not None and recorded.live_pod is None:
        return await _pod_lost(session, record, recorded.pod_id)
    async with reach_run_pod(session, record, target, "nothing to attach") as reached:
        if isinstance(reached, Outcome):
            return reached
        return await follow_and_end(session, reached, record)


@contextlib.asynccontextmanager
async def reach_run_pod(
    session: Session,
    record: RunRecord,
    target: TargetSettings,
    nothing: str,
    interrupted: Callable[[PodMachine], OverbrainerError] | None = None,
    *,
    lost_is_usage: bool = False,
) -> AsyncIterator[PodMachine | Outcome]:
    """The run's pod machine again, or the run's outcome when its pod is gone (the run
    failed). With `lost_is_usage`, a run with no pod on Runpod is refused (exit 2) instead."""
    recorded = recorded_job(session, record, target)
    pod = await pod_record_of(recorded, nothing)
    if pod is None:
        if lost_is_usage:
            raise UsageError(
                f"run {record.id} has no pod left (Runpod has no pod of it): {nothing}"
            )
        yield await _pod_lost(session, record, None)
        return
    async with reach_pod_machine(recorded, pod, interrupted) as reached:
        if isinstance(reached, PodGone):
            yield await _pod_lost(session, record, reached.pod_id)
        else:
            yield reached


async def _pod_lost(session: Session, record: RunRecord, pod_id: str | None) -> Outcome:
    """A running run whose pod is gone: it failed."""
    message = f"pod {pod_id} no longer exists" if pod_id else f"run {record.id} has no pod left"
    failed = attrs.evolve(record, state=RunState.FAILED, message=message)
    await trio.to_thread.run_sync(session.runs.save, failed)
    return await summarize(session, failed)
