"""`train attach`, `train stop` and `train cancel` of a recorded run (§6.3-§6.5)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable

import attrs
import trio

from overbrainer.model.errors import OverbrainerError, UsageError, WorkFailed
from overbrainer.model.job_status import Cancelled, status_name
from overbrainer.project.directory import Project
from overbrainer.storage import write_atomic
from overbrainer.targets import SNAPSHOT_REQUEST as REQUEST_FILE
from overbrainer.targets import (
    Ended,
    Ending,
    Executor,
    JobGone,
    Machine,
    TargetUnreachable,
    kind_of,
)
from overbrainer.training.follow_job import CANCEL_BOUND
from overbrainer.training.follow_run import RunEnding, ending, summarize
from overbrainer.training.outcome import Outcome
from overbrainer.training.retrieve import CHECKPOINTS, RESULTS
from overbrainer.training.run_record import RunsError
from overbrainer.training.run_store import Container, Job, RunRecord, Runs, RunState
from overbrainer.training.session import Detached, Session, detached
from overbrainer.training.target_access import TrainTarget, run_target
from overbrainer.training.train_job import (
    follow_recorded,
    job_ref,
    recorded_run,
)

log = logging.getLogger(__name__)


def _any_target(session: Session, record: RunRecord) -> TrainTarget:
    if record.target not in session.settings.targets:
        raise UsageError(
            f"target `{record.target}` of run {record.id} is no longer in overbrainer.toml"
        )
    return run_target(session.settings, record.target)


def adopt_unrecorded_job(session: Session, record: RunRecord) -> RunRecord:
    """A `preparing` run whose job did start (its `job.pid` exists) recorded as running.

    Only a process killed outright (kill -9, power loss) between spawning the job and saving
    the record leaves this; the job's own `job.pid` names its process group.
    """
    if record.job is not None or record.state is not RunState.PREPARING:
        return record
    target = run_target(session.settings, record.target)
    run_dir = session.runs.dir_of(record.id)
    job = kind_of(target).left_job(target, run_dir, record.id)
    if job is None or job.pid is None:
        return record  # no job started, or its job.pid is on the other machine
    pid, box = job.pid, job.container
    container = None if box is None else Container(box[0].value, box[1])
    log.warning(
        "train: run %s was left preparing, but its job had started (process group %d): "
        "recording it as running",
        record.id,
        pid,
    )
    adopted = attrs.evolve(
        record,
        state=RunState.RUNNING,
        job=Job(str(run_dir), pid, container),
        snapshots=True,
    )
    session.runs.save(adopted)
    return adopted


async def attach_run(session: Session, run_id: str) -> Outcome:
    """Follow a run again (or summarize an ended one) to how it ended."""
    session.training()
    record = await trio.to_thread.run_sync(session.runs.load, run_id)
    _any_target(session, record)
    record = await trio.to_thread.run_sync(adopt_unrecorded_job, session, record)
    if record.job is None and record.state is RunState.PREPARING:
        raise WorkFailed(f"run {run_id} has not started: there is no job to follow")
    if record.state is not RunState.RUNNING or record.job is None:
        return await summarize(session, record)
    interrupted = lambda: detached(record.id, record.target)  # noqa: E731
    async with _reached(session, record, interrupted, "attach") as reached:
        if isinstance(reached, Outcome):
            return reached
        return await follow_recorded(session, reached, record)


@contextlib.asynccontextmanager
async def _reached(
    session: Session,
    record: RunRecord,
    interrupted: Callable[[], OverbrainerError],
    action: str,
) -> AsyncIterator[Machine | Outcome]:
    """The run's machine again, or the run's outcome when its machine is gone (JobGone: the
    run failed)."""
    target = _any_target(session, record)
    recorded = recorded_run(session, record, interrupted, action)
    async with contextlib.AsyncExitStack() as stack:
        try:
            machine = await stack.enter_async_context(kind_of(target).reach(recorded))
        except JobGone as gone:
            lost = gone.message
        else:
            yield machine
            return
    yield await _job_lost(session, record, lost)


async def _job_lost(session: Session, record: RunRecord, message: str) -> Outcome:
    """A running run whose machine is gone: it failed."""
    failed = attrs.evolve(record, state=RunState.FAILED, message=message)
    await trio.to_thread.run_sync(session.runs.save, failed)
    return await summarize(session, failed)


def check_stoppable(record: RunRecord) -> None:
    """Refuse a run whose job cannot take a snapshot request (§6.4)."""
    if record.state.ended:
        raise UsageError(f"run {record.id} already ended: {record.state.value}")
    if record.job is None or record.state is not RunState.RUNNING:
        raise UsageError(f"run {record.id} has not started: there is no job to snapshot yet")
    if not record.snapshots:
        raise UsageError(
            f"run {record.id} was started by an overbrainer older than 0.5.0: its job cannot "
            f"save a snapshot; cancel it with `overbrainer train cancel {record.id}`, or let it "
            "finish"
        )


def request_snapshot(runs: Runs, record: RunRecord) -> None:
    """Write `snapshot.request` (reason `requested`) in the run directory of a local job."""
    assert record.job is not None
    path = runs.dir_of(record.id) / REQUEST_FILE
    try:
        write_atomic(path, "requested\n")
    except OSError as error:
        raise RunsError(f"cannot write {path}: {error.strerror}") from None


async def request_snapshot_on(executor: Executor, record: RunRecord) -> None:
    """Write `snapshot.request` in the run directory of its job, wherever that is."""
    assert record.job is not None
    path = job_ref(record).path(REQUEST_FILE)
    try:
        await executor.put_file(path, "requested\n")
    except TargetUnreachable:
        raise
    except OSError as error:  # a read-only or full run directory: one line, exit 2
        raise RunsError(f"cannot write {path}: {error.strerror}") from None


async def request_snapshot_at(machine: Machine, record: RunRecord) -> None:
    """Write `snapshot.request` in the run directory of its job, on its machine."""
    job = job_ref(record)
    try:
        await machine.request(job, REQUEST_FILE, "requested\n")
    except TargetUnreachable:
        raise
    except OSError as error:  # a read-only or full run directory: one line, exit 2
        raise RunsError(f"cannot write {job.path(REQUEST_FILE)}: {error.strerror}") from None


def lock_holder(project: Project) -> str:
    """`pid N` of the process holding the project lock, as far as its lock file says."""
    try:
        text = project.lock_file.read_text(encoding="utf-8").strip()
    except OSError:
        return "unknown pid"
    return f"pid {text}" if text.isdigit() else "unknown pid"


async def request_stop(session: Session, run_id: str) -> tuple[RunRecord, TrainTarget]:
    """Check that a run can be stopped; the run and its target (the request is not written)."""
    record = await trio.to_thread.run_sync(session.runs.load, run_id)
    check_stoppable(record)
    return record, _any_target(session, record)


async def stop_run(session: Session, record: RunRecord, announce: Callable[[], None]) -> Outcome:
    """`train stop` (§6.4, §7.8): the request written on the run's machine, then the run
    followed to its end (its snapshot retrieved, a pod made for it ended)."""
    interrupted = lambda: detached(record.id, record.target)  # noqa: E731
    async with _reached(session, record, interrupted, "stop") as reached:
        if isinstance(reached, Outcome):
            return reached
        await request_snapshot_at(reached, record)
        announce()
        return await follow_recorded(session, reached, record, requested=True)


def check_cancellable(record: RunRecord) -> None:
    """Refuse a run whose job cannot be cancelled, with `train stop`'s words and exit code 2."""
    if record.state.ended:
        raise UsageError(f"run {record.id} already ended: {record.state.value}")
    if record.job is None:
        raise UsageError(f"run {record.id} has not started: there is no job to cancel yet")


def _record_cancelled(record: RunRecord) -> RunRecord | None:
    """The cancelled record, unless a follower already recorded how the run ended."""
    if record.state.ended:
        return None
    return attrs.evolve(record, state=RunState.CANCELLED, message=None)


async def cancel_run(session: Session, run_id: str) -> RunEnding:
    """Stop a run's job and record it cancelled (§6.5); shielded from Ctrl-C.

    Safe beside a process that follows the run: the record is written only while it is not
    ended yet, under the run's lock; the follower records the end itself from the job's status.
    """
    runs = session.runs
    record = await trio.to_thread.run_sync(runs.load, run_id)
    if record.target in session.settings.targets:
        record = await trio.to_thread.run_sync(adopt_unrecorded_job, session, record)
    check_cancellable(record)
    session.training("cancel needs [training] to retrieve the run's artifacts: ")
    interrupted = lambda: Detached("interrupted before the cancel started")  # noqa: E731
    async with _reached(session, record, interrupted, "cancel") as reached:
        if isinstance(reached, Outcome):
            return ending(session.runs, reached)
        ended, retrieved = await _cancel_on(session, reached, record)
        if retrieved is None:
            return ended  # the job had ended already, or a follower ends the machine
        problem = await reached.end(Ended(Ending.DONE, retrieved=retrieved))
        if problem is not None:
            return RunEnding(ended.lines, WorkFailed(f"run {record.id} ended, but {problem}"))
        return ended


async def _cancel_on(
    session: Session, machine: Machine, record: RunRecord
) -> tuple[RunEnding, bool | None]:
    """Cancel the job and record it; the lines, and whether its files are here (None when
    this command did not record the run cancelled)."""
    runs = session.runs
    run_id = record.id
    job = machine.followed(job_ref(record))
    status = None
    with trio.move_on_after(CANCEL_BOUND, shield=True):
        await job.cancel()
        status = await job.status()
    if status is None:
        raise WorkFailed(f"the cancel of run {run_id} did not finish in time; retry it")
    if not isinstance(status, Cancelled):
        return RunEnding(
            (
                f"train: the job of run {run_id} had already ended ({status_name(status)}): "
                f"collect it with `overbrainer train attach {run_id}`",
            )
        ), None
    saved = await trio.to_thread.run_sync(runs.update, run_id, _record_cancelled)
    if saved.state is RunState.CANCELLED:
        problem = await _retrieve_best_effort(machine, saved, runs)
        if problem is not None:
            return RunEnding((f"train: run {run_id} cancelled ({problem})",)), False
        return RunEnding((f"train: run {run_id} cancelled",)), True
    return RunEnding(
        (
            f"train: the job of run {run_id} was cancelled; the process following it recorded "
            f"the run {saved.state.value}",
        )
    ), None


async def _retrieve_best_effort(machine: Machine, record: RunRecord, runs: Runs) -> str | None:
    """A cancelled remote run's files brought here; the message saved when that fails."""
    if machine.here or record.job is None:
        return None  # a local run directory is R itself
    try:
        with trio.move_on_after(CANCEL_BOUND, shield=True) as scope:
            await machine.fetch(job_ref(record), runs.dir_of(record.id), RESULTS, CHECKPOINTS)
        if scope.cancelled_caught:
            raise WorkFailed("the download did not finish in time")
    except (OSError, WorkFailed) as error:
        message = f"artifacts not retrieved: {error}"
        log.warning("train: %s", message)
        await trio.to_thread.run_sync(
            runs.update, record.id, lambda r: attrs.evolve(r, message=message)
        )
        return message
    return None
