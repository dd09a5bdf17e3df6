"""A training run on a Runpod pod (§7.5, §7.6, §9): provision, start, follow, end the pod."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import NoReturn, TypeVar

import attrs
import trio

from overbrainer.config.secrets import resolve_secret
from overbrainer.config.settings import RunpodTarget
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.error_groups import error_leaves, unwrapped
from overbrainer.model.errors import OverbrainerError, UsageError, WorkFailed
from overbrainer.model.pod_status import DeleteReason
from overbrainer.targets import (
    DEADLINE_MESSAGE,
    DRAIN_LIMIT,
    END_BOUND,
    NO_KEY,
    DeletedBy,
    DiskPolicy,
    Executor,
    LeaseTimes,
    Pace,
    PodRecord,
    PodRun,
    PodState,
    RunpodApi,
    RunpodError,
    RunpodKeyError,
    SshExecutor,
    arm_cost_cap,
    capture_pod_log,
    clean_up,
    cost_cap,
    drain_pod_log,
    end_pod_bounded,
    error_text,
    follow_disk,
    forget_keys,
    guard_cost,
    keep_lease,
    load_pod_record,
    new_pod_run,
    open_pod_ssh,
    open_runpod,
    pod_poll,
    pod_settings,
    provision,
    publish_spend,
    remove,
    vram_floor,
    watch_pace,
    workdir,
    write_ssh_config,
)
from overbrainer.training.follow_job import FollowError
from overbrainer.training.lifecycle import (
    REMOTE_START_BOUND,
    Detached,
    Session,
    StartPlan,
    start_job,
    summarize,
    watch,
)
from overbrainer.training.outcome import Outcome
from overbrainer.training.run_store import (
    RunRecord,
    Runs,
    RunState,
    claim_dir,
    new_owner,
    rfc3339,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

RunPod = PodRun[Runs, RunRecord]
"""The pod of a run, or of a run's compare or export job (their records are run records)."""

GONE_BOUND = 120.0
"""Seconds spent at most telling whether the pod of an unreachable job is gone."""


async def api_key(session: Session) -> str:
    """The Runpod API key (resolved, raced against Ctrl-C); Detached when interrupted."""
    secret = session.settings.runpod.api_key
    if secret is None or not secret.text.strip():
        raise RunpodKeyError(NO_KEY)
    key = await session.interrupt.race(lambda: resolve_secret(secret, "runpod.api_key"))
    if key is None:
        raise Detached("interrupted before the run started")
    return key


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
                raise _detached(run)
            return await follow_and_end(session, run, executor, started)


async def provision_or_fail(run: RunPod, interrupt: Interrupt) -> None:
    """Provision raced against Ctrl-C (§7.5): the interruption cancels it, and only the
    create and its record are shielded (provision.py). On a failure or a stop, delete the pod
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


def _detached(run: RunPod) -> Detached:
    run_id, pod = run.run_id, run.pod
    head = (
        f"interrupted: run {run_id} keeps running on pod {pod.pod_id} "
        f"(${pod.cost_per_hour or 0.0:.2f}/h); follow it again with "
        f"`overbrainer train attach {run_id}`, or delete the pod with "
        f"`overbrainer pod rm {run_id}`."
    )
    if run.keep:
        return Detached(
            f"{head} The pod is kept with no time limit (--keep-pod): "
            f"`ssh -F runs/{run_id}/ssh/config overbrainer-{run_id}`."
        )
    lease_end = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 900))
    return Detached(
        f"{head} The watchdog deletes the pod {run.target.retrieve_grace_minutes} min after "
        "the job ends if its results are not retrieved, and at "
        f"{pod.deadline or lease_end} or 15 min from now (once the lease this command held "
        "runs out), whichever is later."
    )


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
        raise _detached(run)
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


async def attach_pod(session: Session, record: RunRecord, target: RunpodTarget) -> Outcome:
    """`train attach` of a Runpod run (§7.8): reach its pod again, follow, then end the pod."""
    if record.job is None and record.state is RunState.PREPARING:
        raise WorkFailed(
            f"run {record.id} has no job yet: its pod is still starting, or it stopped before "
            "its job started"
        )
    pod = await trio.to_thread.run_sync(load_pod_record, session.runs.dir_of(record.id))
    if record.state is not RunState.RUNNING or record.job is None:
        return await summarize(session, record)
    if pod is None or pod.live_pod is None:
        return await _pod_lost(session, record, pod.pod_id if pod else None)
    async with reach_pod(session, record, target, pod) as reached:
        if isinstance(reached, Outcome):
            return reached
        run, executor = reached
        return await follow_and_end(session, run, executor, record)


async def live_pod_record(session: Session, record: RunRecord, nothing: str) -> PodRecord:
    """The run's `pod.json` when it names a pod not deleted; else `run X has no pod left: …`."""
    pod = await trio.to_thread.run_sync(load_pod_record, session.runs.dir_of(record.id))
    if pod is None or pod.live_pod is None:
        raise UsageError(f"run {record.id} has no pod left: {nothing}")
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
                raise (interrupted or _detached)(run)
            yield run, executor


async def _pod_lost(session: Session, record: RunRecord, pod_id: str | None) -> Outcome:
    """A running run whose pod is gone: it failed."""
    message = f"pod {pod_id} no longer exists" if pod_id else f"run {record.id} has no pod left"
    failed = attrs.evolve(record, state=RunState.FAILED, message=message)
    await trio.to_thread.run_sync(session.runs.save, failed)
    return await summarize(session, failed)


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
