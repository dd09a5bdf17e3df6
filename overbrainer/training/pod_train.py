"""A training run on a Runpod pod (§7.5): a pod made for the run, provisioned and started,
shielded, then followed and ended (pod_follow.py)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import NoReturn

import attrs
import trio

from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.model.pod_status import DeleteReason
from overbrainer.targets import (
    PodState,
    RunpodApi,
    RunpodTarget,
    SshExecutor,
    arm_cost_cap,
    clean_up,
    error_text,
    new_pod_run,
    open_pod_ssh,
    open_runpod,
    pod_settings,
    provision,
    vram_floor,
    workdir,
)
from overbrainer.training.outcome import Outcome
from overbrainer.training.pod_follow import follow_and_end
from overbrainer.training.run_pod import RunPod, api_key, pod_detached
from overbrainer.training.run_store import RunRecord, RunState, claim_dir, new_owner
from overbrainer.training.session import Detached, Session
from overbrainer.training.start import REMOTE_START_BOUND, StartPlan, start_job

log = logging.getLogger(__name__)


def _create_run(session: Session, plan: StartPlan, target: RunpodTarget) -> RunRecord:
    """Claim the run here; R is its directory on the pod (blocking)."""
    owner = new_owner()
    return session.runs.create(
        session.settings.project.name,
        plan.name,
        lambda run_id: f"{workdir(target)}/{run_id}",
        accept=lambda run_id, path: claim_dir(path, owner),
        resumed_from=plan.resume_from,
    )


StrayCheck = Callable[[RunpodApi], Awaitable[list[str]]]
"""What a Runpod `train` warns about at its start (the account's pods nothing will delete)."""


async def _warn_strays(session: Session, api: RunpodApi, strays: StrayCheck | None) -> None:
    if strays is None:
        return
    try:
        warnings = await session.interrupt.race(lambda: strays(api))
    except OverbrainerError as error:
        log.warning("cannot list the account's pods to look for strays: %s", error.message)
        return
    if warnings is None:
        raise Detached("interrupted before the run started")
    for warning in warnings:
        log.warning("%s", warning)


async def train_on_pod(
    session: Session, plan: StartPlan, *, keep: bool, strays: StrayCheck | None = None
) -> Outcome:
    """`train` on a Runpod target: a pod made for the run, followed, then deleted (or kept)."""
    target = pod_settings(plan.target)
    key = await api_key(session)
    async with open_runpod(session.settings.runpod.url, key) as api:
        await _warn_strays(session, api, strays)
        floor = await session.interrupt.race(lambda: vram_floor(session.settings, target))
        if session.interrupt.caught:
            raise Detached("interrupted before the run started")
        record = await trio.to_thread.run_sync(_create_run, session, plan, target)
        log.info("train: run %s on target `%s`, in %s", record.id, plan.name, record.remote_dir)
        session.created(record.id)
        run = new_pod_run(
            api,
            session.bus,
            session.runs,
            record,
            target,
            keep=keep,
            stopped=lambda: session.interrupt.caught,
            vram_floor_gb=floor,
        )
        await provision_or_fail(run, session.interrupt)
        async with open_pod_ssh(run, plan.name) as executor:
            started = await start_on_pod(
                run, executor, lambda: start_job(session, run.run, plan, executor)
            )
            if session.interrupt.caught:
                raise pod_detached(run)
            return await follow_and_end(session, run, executor, started)


async def provision_or_fail(run: RunPod, interrupt: Interrupt) -> None:
    """Provision raced against Ctrl-C (§7.5): the interruption cancels it, and only the
    create and its record are shielded (pod_create.py). On a failure or a stop, delete the pod
    and fail the run (or the run's job)."""
    failure: str | None = None

    async def attempt() -> bool:
        nonlocal failure
        try:
            return await provision(run)
        except (OverbrainerError, OSError) as error:
            failure = error_text(error)
            return False

    ready = await interrupt.race(attempt)
    if ready and not run.stopped():
        return
    if failure is None:
        await _interrupted_before_job(run)
    left = await clean_up(run, DeleteReason.NOT_READY)
    await _fail_run(run, failure)
    extra = "" if not left else "; a pod of it may be left: check `overbrainer pod ls`"
    raise WorkFailed(f"{run.subject} failed: {failure}{extra}")


async def _interrupted_before_job(run: RunPod) -> NoReturn:
    """A Ctrl-C before the job started: delete the pod, fail the run, say so (§7.5 step 6)."""
    left = await clean_up(run, DeleteReason.INTERRUPTED)
    await _fail_run(run, "interrupted before its job started")
    tail = (
        "but a pod of it may be left: check `overbrainer pod ls`" if left else "it has no pod left"
    )
    raise Detached(f"interrupted: {run.subject} stopped before its job started; {tail}")


async def _fail_run(run: RunPod, message: str) -> None:
    failed = attrs.evolve(run.run, state=RunState.FAILED, message=message)
    with trio.move_on_after(30, shield=True):
        await trio.to_thread.run_sync(run.runs.save, failed)


async def start_on_pod(
    run: RunPod, executor: SshExecutor, start: Callable[[], Awaitable[RunRecord]]
) -> RunRecord:
    """Shielded (§7.5 steps 7-8): connect, arm the cost cap, reserve R, `start` the job (its
    `running` record). On a failure or a stop, the pod is deleted and the record failed."""
    started: RunRecord | None = None
    failure = "the job did not start in time"
    with trio.move_on_after(REMOTE_START_BOUND, shield=True):
        try:
            await executor.connect()
            await arm_cost_cap(run.pod, run.remote_dir, executor)
            assert run.keys is not None
            if not await executor.claim(run.remote_dir, run.keys.client_public):
                raise WorkFailed(f"{run.remote_dir} on the pod belongs to another {run.noun}")
            if not run.stopped():  # a Ctrl-C since the pod was ready: no job, no pod
                started = await start()
        except (OverbrainerError, OSError) as error:
            failure = error_text(error)
    if started is None and run.stopped():
        await _interrupted_before_job(run)
    if started is None:
        left = await clean_up(run, DeleteReason.NOT_READY)
        await _fail_run(run, failure)
        extra = "; a pod of it may be left: check `overbrainer pod ls`" if left else ""
        raise WorkFailed(f"{run.subject} failed to start: {failure}{extra}")
    pod_id = run.pod.pod_id
    if run.keep:
        log.warning(
            "--keep-pod: pod %s is kept with no time limit, at $%.2f/h, even once the %s "
            "ends; nothing deletes it but `overbrainer pod rm %s`",
            pod_id,
            run.pod.cost_per_hour or 0.0,
            run.noun,
            run.run_id,
        )
    await run.save(state=PodState.RUNNING)
    return started
