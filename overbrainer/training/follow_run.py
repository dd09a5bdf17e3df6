"""A started run followed to its end (§6.2, §6.6): watched, its results brought here and checked,
how it ended recorded, and the lines that tell the user."""

from __future__ import annotations

from pathlib import Path

import attrs
import trio

from overbrainer.model.error_groups import unwrapped
from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.model.job_status import JobStatus
from overbrainer.targets import Engine, Executor, ExecutorJob, JobRef
from overbrainer.training.axolotl_config import CONFIG_FILE
from overbrainer.training.follow_job import MetricsTail, follow, guard_stop
from overbrainer.training.outcome import (
    InvalidProof,
    Outcome,
    conclude,
    ended_state,
    local_summary,
    read_proof,
)
from overbrainer.training.retrieve import retrieve_checkpoint, retrieve_results
from overbrainer.training.run_store import RunRecord, Runs, RunState
from overbrainer.training.session import Session, detached
from overbrainer.training.summary import MetricsSummary
from overbrainer.training.target_access import sampler_for


@attrs.frozen
class RunEnding:
    """How a run ended for the user: the lines for stdout (§6.6), then the error it fails with."""

    lines: tuple[str, ...]
    error: WorkFailed | None = None


def job_ref(record: RunRecord) -> JobRef:
    """The recorded job of a run, as its executor finds it."""
    assert record.job is not None
    container = record.job.container
    box = None if container is None else (Engine(container.engine), container.name)
    return JobRef(record.job.dir, record.job.pid, box, record.job.ref)


async def summarize(session: Session, record: RunRecord) -> Outcome:
    """The outcome of a run that is not running, from its local files."""
    run_dir = session.runs.dir_of(record.id)
    summary = await trio.to_thread.run_sync(local_summary, run_dir)
    retrieved = (run_dir / "job.log").exists() and (
        record.snapshot is None or (run_dir / record.snapshot.checkpoint).is_dir()
    )
    return Outcome(record, summary, retrieved)


async def watch(
    session: Session, executor: Executor, record: RunRecord, *, requested: bool = False
) -> Outcome:
    """Follow a running run to its end, bring its results here, and save how it ended."""
    if record.state is not RunState.RUNNING or record.job is None:
        return await summarize(session, record)
    job = ExecutorJob(executor, job_ref(record))
    tail = MetricsTail(MetricsSummary())
    sampler = sampler_for(executor, record.job.dir)
    times = session.follow_times(record.target)
    async with unwrapped(), trio.open_nursery() as nursery:
        if record.snapshots:
            nursery.start_soon(lambda: guard_stop(job, times=times, requested=requested))
        status = await follow(
            job, session.bus, tail, run_id=record.id, times=times, sampler=sampler
        )
        nursery.cancel_scope.cancel()
    return await finish_followed(session, executor, record, status, tail.summary)


async def _retrieve(executor: Executor, record: RunRecord, run_dir: Path) -> str | None:
    """Bring a remote run's results here and check them; the problem, None when all is well."""
    assert record.job is not None
    remote = record.job.dir
    try:
        await retrieve_results(executor, remote, run_dir)
        try:
            proof = await trio.to_thread.run_sync(read_proof, run_dir)
        except InvalidProof:
            proof = None
        if proof is not None:
            await retrieve_checkpoint(executor, remote, run_dir, proof.checkpoint)
    except (OSError, OverbrainerError) as error:
        return error.message if isinstance(error, OverbrainerError) else str(error)
    return None


async def finish_followed(
    session: Session,
    executor: Executor,
    record: RunRecord,
    status: JobStatus,
    summary: MetricsSummary,
) -> Outcome:
    """Retrieve and verify a finished job's results, then record how the run ended."""
    runs = session.runs
    run_dir = runs.dir_of(record.id)
    problem = None if executor.local else await _retrieve(executor, record, run_dir)
    if problem is None:
        # One thread for both, as one step: nothing can cancel between concluding and saving.
        ended = await trio.to_thread.run_sync(
            lambda: _save(runs, conclude(record, status, summary, run_dir))
        )
        return Outcome(ended, summary, True)
    state, message = ended_state(status, summary, record.id)
    if state is RunState.SUCCEEDED:
        raise WorkFailed(
            f"the results of run {record.id} cannot be retrieved: {problem}; the run stays "
            f"recorded running: retrieve them with `overbrainer train attach {record.id}`"
        )
    note = f"artifacts not retrieved: {problem}"
    message = f"{message} ({note})" if message else note
    ended = attrs.evolve(record, state=state, message=message)
    await trio.to_thread.run_sync(lambda: _save(runs, ended))
    return Outcome(ended, summary, False)


def _save(runs: Runs, record: RunRecord) -> RunRecord:
    # The follower knows most about the end (a snapshot proof, the metrics), so its record
    # wins; `update` only orders it with a `train cancel` writing beside it.
    return runs.update(record.id, lambda _: record)


async def follow_to_end(
    session: Session, executor: Executor, record: RunRecord, *, requested: bool = False
) -> Outcome:
    """`watch` raced against Ctrl-C: Detached when the user stops following."""
    outcome = await session.interrupt.race(
        lambda: watch(session, executor, record, requested=requested)
    )
    if outcome is None:
        raise detached(record.id, record.target)
    return outcome


def _model_word(run_dir: Path) -> str:
    try:
        text = (run_dir / CONFIG_FILE).read_text(encoding="utf-8")
    except OSError:
        return "adapter"
    for line in text.splitlines():
        if line.startswith("adapter:"):
            return "adapter"
    return "model"


def ending(runs: Runs, outcome: Outcome) -> RunEnding:
    """The run's end (§6.6): its lines for stdout, and the error of a failed or cancelled run."""
    record = outcome.record
    run_id = record.id
    head = f"train: run {run_id} {record.state.value}; {outcome.summary.describe()}"
    match record.state:
        case RunState.SUCCEEDED:
            run_dir = runs.dir_of(run_id)
            lines = [
                f"{head}; output in runs/{run_id}/output",
                f"train: {_model_word(run_dir)} in runs/{run_id}/output",
            ]
            if (run_dir / "output" / "merged").is_dir():
                lines.append(f"train: merged model in runs/{run_id}/output/merged")
            return RunEnding(tuple(lines))
        case RunState.STOPPED:
            snap = record.snapshot
            assert snap is not None
            return RunEnding(
                (
                    f"train: run {run_id} stopped at step {snap.step} ({snap.reason}): snapshot "
                    f"in runs/{run_id}/{snap.checkpoint}; resume with "
                    f"`overbrainer train --resume-from {run_id}`",
                    f"train: runs/{run_id}/output also holds the partial model at step "
                    f"{snap.step}, not a finished one",
                )
            )
        case RunState.CANCELLED:
            return RunEnding((head,), WorkFailed(f"run {run_id} was cancelled"))
        case RunState.FAILED:
            return RunEnding((head,), WorkFailed(record.message or f"run {run_id} failed"))
        case RunState.PREPARING | RunState.RUNNING:
            return RunEnding((), WorkFailed(f"run {run_id} has no job"))
