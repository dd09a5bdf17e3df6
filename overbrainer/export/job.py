"""`overbrainer export`: the export job on the run's target, followed, cancelled on Ctrl-C (§B.2).

The export reuses the training run machinery: its record is a run record in
`runs/<run>/exports/<export-id>/run.json` (IDs `export_YYYYMMDD-HHMMSS`), its job starts and is
followed through the run's executor like a training job, and Ctrl-C cancels it.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio

from overbrainer.export import ollama
from overbrainer.export.deliver import GGUF_DIR, Delivered, deliver
from overbrainer.export.plan import ExportPlan, ExportRequest
from overbrainer.export.start import ExportStart, Started, create_export, end_export, start_export
from overbrainer.model.errors import EXIT_INTERRUPTED, OverbrainerError, WorkFailed
from overbrainer.model.job_kind import JobKind
from overbrainer.model.job_status import Cancelled, Exited, JobStatus
from overbrainer.targets import Executor, ExecutorJob, gguf_name, kind_of, quote, resolve_pin
from overbrainer.training import (
    CANCEL_BOUND,
    CONFIG_FILE,
    METRICS_FILE,
    OUTPUT_DIR,
    START_BOUND,
    MetricsSummary,
    MetricsTail,
    RunRecord,
    Runs,
    RunState,
    Session,
    fetch,
    follow,
    job_ref,
)

log = logging.getLogger(__name__)

RESULTS = (GGUF_DIR, METRICS_FILE, "job.log")
PART = ("*.part",)


class ExportCancelled(OverbrainerError):
    """Ctrl-C cancelled the export's job (exit 130)."""

    exit_code = EXIT_INTERRUPTED


def last_message(job_dir: Path) -> str | None:
    """The last `export: ` line of the job's log, without its prefix."""
    try:
        lines = (job_dir / "job.log").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if line.startswith("export: "):
            return line.removeprefix("export: ").strip()
    return None


def _failure(status: JobStatus, job_dir: Path) -> str:
    """The export's last `export:` line; else how its job ended and where its log is (a
    container engine's own error, say)."""
    found = last_message(job_dir)
    if found is not None:
        return found
    log_file = "/".join(("runs", *job_dir.parts[-3:], "job.log"))
    if isinstance(status, Exited):
        return f"its job exited with code {status.code}; its log is {log_file}"
    return f"its job was lost; its log is {log_file}"


def _clear_work(job_dir: Path) -> None:
    """What a killed job could leave behind: its work directory and `.part` files."""
    shutil.rmtree(job_dir / "export-work", ignore_errors=True)
    for part in (job_dir / GGUF_DIR).glob("*.part"):
        part.unlink(missing_ok=True)


async def run_export(session: Session, request: ExportRequest, plan: ExportPlan) -> list[str]:
    """Export a run's model to GGUF on its (local or SSH) target and deliver it; the result
    lines (§B.5)."""
    run, choice, exports = plan.run, plan.choice, plan.exports
    target = plan.target
    assert not kind_of(target).makes_pod

    def interrupted() -> ExportCancelled:
        return ExportCancelled(f"interrupted before the export of run {run.id} started")

    async with session.open_target(run.target, target, interrupted) as executor:
        export = await create_export(plan, request, f"{run.remote_dir.rstrip('/')}/exports")
        started: Started | None = None
        with trio.move_on_after(START_BOUND, shield=True):
            started = await start_export(
                ExportStart(exports, export, request, run, choice, target, executor)
            )
        if started is None:
            job_dir = exports.dir_of(export.id)
            await end_export(
                exports, export, RunState.FAILED, "the job did not start in time", job_dir
            )
            raise WorkFailed(f"export {export.id} of run {run.id} failed: the job did not start")
        lines = await follow_and_deliver(session, executor, exports, run, request, started)
    return lines


Watch = Callable[[Callable[[], Awaitable[JobStatus]]], Awaitable[JobStatus | None]]
"""How the job's follow is run: raced against Ctrl-C (None), maybe beside a pod's guards."""


async def follow_and_deliver(
    session: Session,
    executor: Executor,
    exports: Runs,
    run: RunRecord,
    request: ExportRequest,
    started: Started,
    watch: Watch | None = None,
) -> list[str]:
    """Follow the job (Ctrl-C cancels it), bring its GGUF here and deliver it; the lines."""
    record, job_dir = started.record, started.job_dir
    subject = f"export {record.id} of run {run.id}"
    assert record.job is not None
    job = ExecutorJob(executor, job_ref(record))

    async def end(state: RunState, message: str | None) -> None:
        """Record how the export ended; remove what was staged, here and on the target."""
        with trio.move_on_after(CANCEL_BOUND, shield=True):
            if executor.local and state is RunState.CANCELLED:
                await trio.to_thread.run_sync(_clear_work, job_dir)
            await end_export(exports, record, state, message, job_dir)
            if started.staged:
                await _remove_remote_staged(executor, job.job.dir)

    tail = MetricsTail(MetricsSummary())

    def follow_job() -> Awaitable[JobStatus]:
        times = session.follow_times(run.target)
        return follow(job, session.bus, tail, run_id=record.id, times=times, kind=JobKind.EXPORT)

    status = await (watch or session.interrupt.race)(follow_job)
    if status is None:
        with trio.move_on_after(CANCEL_BOUND, shield=True):
            try:
                await job.cancel()
            except (OSError, OverbrainerError) as error:
                log.warning("cannot cancel the export job: %s", error)
        await end(RunState.CANCELLED, "cancelled")
        raise ExportCancelled(f"{subject} was cancelled")
    if not executor.local:
        try:
            await fetch(executor, job.job.dir, job_dir, RESULTS, PART)
        except (OSError, OverbrainerError) as error:
            message = error.message if isinstance(error, OverbrainerError) else str(error)
            await end(RunState.FAILED, message)
            problem = f"its results cannot be retrieved: {message}"
            raise WorkFailed(f"{subject} failed: {problem}") from None
    if isinstance(status, Cancelled):
        await end(RunState.CANCELLED, "cancelled")
        raise WorkFailed(f"{subject} was cancelled")
    if status != Exited(0):
        message = await trio.to_thread.run_sync(_failure, status, job_dir)
        await end(RunState.FAILED, message)
        raise WorkFailed(f"{subject} failed: {message}")
    run_dir = exports.root.parent
    name = gguf_name(run.id, request.quantize)
    try:
        delivered = await trio.to_thread.run_sync(
            deliver, run.id, run_dir, job_dir, name, request.quantize, resolve_pin().tag
        )
    except WorkFailed as error:
        await end(RunState.FAILED, error.message)
        raise WorkFailed(f"{subject} failed: {error.message}") from None
    await end(RunState.SUCCEEDED, None)
    return await delivery_lines(run_dir, delivered, request.ollama_name)


async def _remove_remote_staged(executor: Executor, remote_job: str) -> None:
    """Remove the model and config staged into the job directory on the target."""
    try:
        await executor.probe(f"cd -- {quote(remote_job)} && rm -rf -- {OUTPUT_DIR} {CONFIG_FILE}")
    except (OSError, OverbrainerError) as error:
        log.debug("cannot remove the staged files on the target: %s", error)


async def delivery_lines(run_dir: Path, delivered: Delivered, name: str | None) -> list[str]:
    """The §B.5 lines of a delivered GGUF, running `ollama create` when a name is given."""
    lines = [delivered.line()]
    if name is None:
        lines.append(ollama.hint(delivered.folder, delivered.run_id))
        return lines
    created = await ollama.create(run_dir / GGUF_DIR, name)
    if created is not None:
        lines.append(created)
    return lines
