"""`train attach` of a Runpod run (§7.8): its pod reached again (or found gone, the run failed),
then followed and ended as `train` does."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

import attrs
import trio

from overbrainer.model.errors import OverbrainerError, UsageError, WorkFailed
from overbrainer.targets import (
    DeletedBy,
    PodRecord,
    PodRun,
    PodState,
    RunpodTarget,
    SshExecutor,
    forget_keys,
    load_pod_record,
    open_pod_ssh,
    open_runpod,
    write_ssh_config,
)
from overbrainer.training.follow_run import summarize
from overbrainer.training.outcome import Outcome
from overbrainer.training.pod_follow import follow_and_end
from overbrainer.training.pod_lookup import run_pod_record
from overbrainer.training.run_pod import RunPod, api_key, pod_detached
from overbrainer.training.run_store import RunRecord, RunState, rfc3339
from overbrainer.training.session import Session


async def attach_pod(session: Session, record: RunRecord, target: RunpodTarget) -> Outcome:
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
    pod = await run_pod_record(session, record, "nothing to attach")
    if pod is None:
        return await _pod_lost(session, record, None)
    async with reach_pod(session, record, target, pod) as reached:
        if isinstance(reached, Outcome):
            return reached
        run, executor = reached
        return await follow_and_end(session, run, executor, record)


async def live_pod_record(session: Session, record: RunRecord, nothing: str) -> PodRecord:
    """The run's pod record when it names a pod not deleted (found on Runpod by the run's name
    when `pod.json` is missing); else `run X has no pod left: …`."""
    pod = await run_pod_record(session, record, nothing)
    if pod is None:
        raise UsageError(f"run {record.id} has no pod left (Runpod has no pod of it): {nothing}")
    return pod


@contextlib.asynccontextmanager
async def reach_pod(
    session: Session,
    record: RunRecord,
    target: RunpodTarget,
    pod: PodRecord,
    interrupted: Callable[[RunPod], OverbrainerError] | None = None,
) -> AsyncIterator[tuple[RunPod, SshExecutor] | Outcome]:
    """The run's pod again (§7.8): looked up, its ssh config rewritten, connected.

    Yields the run's outcome instead when the pod is gone (the run failed). Ctrl-C while
    connecting raises `interrupted(run)` (by default the detached error of a pod run).
    """
    live = pod.live_pod
    assert live is not None
    run_dir = session.runs.dir_of(record.id)
    key = await api_key(session)
    async with open_runpod(session.settings.runpod.url, key) as api:
        run = PodRun(
            api,
            session.bus,
            session.runs,
            record,
            target,
            pod.keep,
            lambda: session.interrupt.caught,
            pod,
        )
        found = await api.get_pod(live)
        if found is None:
            await run.save(
                state=PodState.DELETED, deleted_at=rfc3339(), deleted_by=DeletedBy.UNKNOWN
            )
            await forget_keys(run)
            yield await _pod_lost(session, record, live)
            return
        if found.status.dead:
            raise WorkFailed(
                f"pod {found.id} of run {record.id} is {found.status.value}: its job cannot be "
                f"reached; delete it with `overbrainer pod rm {record.id}`"
            )
        if found.ssh is None:
            raise WorkFailed(f"pod {found.id} of run {record.id} has no SSH endpoint right now")
        await trio.to_thread.run_sync(write_ssh_config, run_dir, record.id, found.ssh)
        async with open_pod_ssh(run, record.target) as executor:

            async def connect() -> bool:
                await executor.connect()
                return True

            if await session.interrupt.race(connect) is None:
                raise (interrupted or pod_detached)(run)
            yield run, executor


async def _pod_lost(session: Session, record: RunRecord, pod_id: str | None) -> Outcome:
    """A running run whose pod is gone: it failed."""
    message = f"pod {pod_id} no longer exists" if pod_id else f"run {record.id} has no pod left"
    failed = attrs.evolve(record, state=RunState.FAILED, message=message)
    await trio.to_thread.run_sync(session.runs.save, failed)
    return await summarize(session, failed)
