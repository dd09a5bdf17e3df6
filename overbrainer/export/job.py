"""`overbrainer export`: the export job on the run's target, followed, cancelled on Ctrl-C (§B.2).

The export reuses the training run machinery: its record is a run record in
`runs/<run>/exports/<export-id>/run.json` (IDs `export_YYYYMMDD-HHMMSS`), its job starts and is
followed through the run's executor like a training job, and Ctrl-C cancels it.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path

import attrs
import trio

from overbrainer.export import ollama
from overbrainer.export.deliver import GGUF_DIR, Delivered, deliver, deliver_in_job, remove_staged
from overbrainer.export.plan import ModelChoice, model_of
from overbrainer.export.record import EXPORT_FILE, EXPORTS_DIR, latest_export
from overbrainer.model.errors import EXIT_INTERRUPTED, OverbrainerError, WorkFailed
from overbrainer.model.job_kind import JobKind
from overbrainer.model.job_status import Cancelled, Exited, JobStatus
from overbrainer.model.train_metric import JobStage
from overbrainer.storage import write_atomic
from overbrainer.targets import (
    CACHE_DIR,
    CACHE_ENV,
    FAILED_FILE,
    POD_LOCAL,
    SCRIPT_FILE,
    Command,
    Executor,
    ExecutorJob,
    export_env,
    export_script,
    gguf_name,
    kind_of,
    native_commands,
    pod_settings,
    quote,
    resolve_pin,
)
from overbrainer.training import (
    CANCEL_BOUND,
    CONFIG_FILE,
    METRICS_ENV,
    METRICS_FILE,
    OUTPUT_DIR,
    START_BOUND,
    Container,
    Job,
    JobPlan,
    MetricsSummary,
    MetricsTail,
    NestedJob,
    RunRecord,
    Runs,
    RunState,
    Session,
    TrainTarget,
    expand_venv,
    fetch,
    follow,
    job_ref,
    plan_nested_job,
    run_target,
    warn_missing_engine,
)

log = logging.getLogger(__name__)

EXPORT_SLUG = "export"
"""The ID prefix of exports: `export_YYYYMMDD-HHMMSS`."""
RESULTS = (GGUF_DIR, METRICS_FILE, "job.log")
PART = ("*.part",)


class ExportCancelled(OverbrainerError):
    """Ctrl-C cancelled the export's job (exit 130)."""

    exit_code = EXIT_INTERRUPTED


@attrs.frozen
class ExportRequest:
    """What `overbrainer export` was asked: the run, the type, the Ollama name, `--keep-pod`."""

    run_id: str
    quantize: str
    ollama_name: str | None = None
    keep_pod: bool = False


def export_target(session: Session, record: RunRecord, keep_pod: bool) -> TrainTarget:
    """The run's target, where the export runs (a Runpod one: on a new pod; a container
    runtime: in the target's container, as a training job)."""
    return run_target(session.settings, record.target, keep_pod=keep_pod)


def _link_tree(source: Path, target: Path, top_skip: tuple[str, ...]) -> None:
    """Hard-link `source` into `target` (copying across file systems), top names skipped."""
    for folder, dirs, files in os.walk(source):
        here = Path(folder)
        if here == source:
            dirs[:] = [d for d in dirs if not d.startswith(top_skip)]
        out = target / here.relative_to(source)
        out.mkdir(parents=True, exist_ok=True)
        for name in files:
            try:
                os.link(here / name, out / name)
            except OSError as error:
                if error.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                    raise
                shutil.copy2(here / name, out / name)


def stage_model(run_dir: Path, job_dir: Path, model: str) -> None:
    """Stage the model (checkpoints and GGUFs left out) and config into the job directory."""
    _link_tree(run_dir / model, job_dir / OUTPUT_DIR, ("checkpoint-", "gguf"))
    os.link(run_dir / CONFIG_FILE, job_dir / CONFIG_FILE)


async def _remote_has_model(executor: Executor, remote_run: str, model: str) -> bool:
    folder = f"{remote_run.rstrip('/')}/{model}"
    script = (
        f"cd -- {quote(remote_run)} 2>/dev/null && [ -f {quote(CONFIG_FILE)} ] && "
        f"{{ [ -f {quote(folder + '/adapter_config.json')} ] || "
        f"[ -f {quote(folder + '/config.json')} ]; }} && echo yes || echo no"
    )
    return (await executor.probe(script)).strip() == "yes"


@attrs.frozen
class Started:
    """A started export job: its record, its directory here, and whether files were staged."""

    record: RunRecord
    job_dir: Path
    staged: bool


def job_commands(
    target: TrainTarget, env: dict[str, str], home: str | None, env_file: str | None = None
) -> str:
    """The export job's native commands on a pod: the environment (after sourcing `env_file`,
    the pod's job environment), its stage line, then `sh export.sh`."""
    venv = expand_venv(target.venv, home)
    if venv is not None:
        env = {**env, "PATH": f"{venv.rstrip('/')}/bin"}
    return native_commands([EXPORT_COMMAND], env, env_file=env_file)


EXPORT_COMMAND = Command(JobStage.EXPORT, "sh", (SCRIPT_FILE,), from_venv=False)
"""The export job's one command (`sh` is the system's, never a venv's)."""


def export_job(
    target: TrainTarget,
    env: dict[str, str],
    *,
    run: RunRecord,
    export: RunRecord,
    executor: Executor,
    env_file: str | None = None,
) -> JobPlan:
    """The export job's commands: on a pod natively; on a local or SSH target as a nested job
    of the run (a container mounts the run directory and the tool cache and works in
    `exports/<export-id>`, so `../../<model>` is the run's model there too)."""
    home = None if executor.local else executor.home
    tools = f"{executor.workdir.rstrip('/')}/{CACHE_DIR}"
    if kind_of(target).makes_pod:
        return JobPlan(
            job_commands(pod_settings(target), {**env, CACHE_ENV: tools}, home, env_file)
        )
    nested = NestedJob(
        run_id=run.id,
        run_dir=run.remote_dir,
        job_id=export.id,
        folder=f"{EXPORTS_DIR}/{export.id}",
        command=EXPORT_COMMAND,
        env=env,
        tools=tools,
    )
    return plan_nested_job(target, executor, nested)


NEVER_UPLOADED = POD_LOCAL
"""What the upload of an export directory leaves out (keys and the pod record stay here)."""


@attrs.frozen
class ExportStart:
    """An export job about to start: its record among the run's exports, what was asked, the
    run and its model, and the executor of its target; a pod's job sources `env_file` first."""

    exports: Runs
    export: RunRecord
    request: ExportRequest
    run: RunRecord
    choice: ModelChoice
    target: TrainTarget
    executor: Executor
    env_file: str | None = None


async def start_export(start: ExportStart) -> Started:
    """Write the script, stage and upload what the target lacks, spawn the job (call shielded)."""
    exports, export, request, run = start.exports, start.export, start.request, start.run
    choice, target, executor, env_file = start.choice, start.target, start.executor, start.env_file
    job_dir = exports.dir_of(export.id)
    remote = export.remote_dir
    staged = False
    try:
        if not executor.local:
            staged = not await _remote_has_model(executor, run.remote_dir, choice.model)
            if staged:
                run_dir = exports.root.parent
                await trio.to_thread.run_sync(stage_model, run_dir, job_dir, choice.model)
        await trio.to_thread.run_sync(write_atomic, job_dir / SCRIPT_FILE, export_script())
        model = OUTPUT_DIR if staged else f"../../{choice.model}"
        config = CONFIG_FILE if staged else f"../../{CONFIG_FILE}"
        env = export_env(
            name=run.id,
            quantize=request.quantize,
            model=model,
            config=config,
            cache=f"{executor.workdir.rstrip('/')}/{CACHE_DIR}",
        )
        env[METRICS_ENV] = f"{remote}/{METRICS_FILE}"
        plan = export_job(target, env, run=run, export=export, executor=executor, env_file=env_file)
        if not executor.local:
            await executor.upload(job_dir, remote, NEVER_UPLOADED)
        job = await executor.spawn(remote, plan.commands, {})
    except (OSError, OverbrainerError) as error:
        message = error.message if isinstance(error, OverbrainerError) else str(error)
        await _end(exports, export, RunState.FAILED, message, job_dir)
        raise WorkFailed(f"export {export.id} of run {run.id} failed: {message}") from None
    box = None if plan.container is None else Container(plan.container[0].value, plan.container[1])
    running = attrs.evolve(export, state=RunState.RUNNING, job=Job(remote, job.pid, box))
    await trio.to_thread.run_sync(exports.save, running)
    return Started(running, job_dir, staged)


async def _end(
    exports: Runs, record: RunRecord, state: RunState, message: str | None, job_dir: Path
) -> RunRecord:
    def save() -> RunRecord:
        remove_staged(job_dir)
        ended = attrs.evolve(record, state=state, message=message)
        exports.save(ended)
        return ended

    return await trio.to_thread.run_sync(save)


def _last_message(job_dir: Path) -> str | None:
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
    found = _last_message(job_dir)
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


@attrs.frozen
class ExportPlan:
    """An export checked before anything connects: the run, its model, its target."""

    run: RunRecord
    choice: ModelChoice
    target: TrainTarget
    exports: Runs


async def plan_export(session: Session, request: ExportRequest) -> ExportPlan:
    """The refusals of §B.1 and the run's model and target (the stopped-run warning logged)."""
    runs = session.runs
    run = await trio.to_thread.run_sync(runs.load, request.run_id)
    run_dir = runs.dir_of(run.id)
    choice = await trio.to_thread.run_sync(model_of, run, run_dir)
    target = export_target(session, run, request.keep_pod)
    warn_missing_engine(run.target, target)
    if choice.warning is not None:
        log.warning("%s", choice.warning)
    return ExportPlan(run, choice, target, Runs(run_dir / EXPORTS_DIR))


async def create_export(plan: ExportPlan, request: ExportRequest, remote_root: str) -> RunRecord:
    """Claim `exports/export_<time>` (its directory on the target under `remote_root`) and say
    so."""
    run = plan.run
    export = await trio.to_thread.run_sync(
        lambda: plan.exports.create(
            EXPORT_SLUG, run.target, lambda i: f"{remote_root.rstrip('/')}/{i}"
        )
    )
    log.info(
        "export: %s: runs/%s/%s to GGUF %s on target `%s`",
        export.id,
        run.id,
        plan.choice.model,
        request.quantize,
        run.target,
    )
    return export


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
            await _end(exports, export, RunState.FAILED, "the job did not start in time", job_dir)
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
            await _end(exports, record, state, message, job_dir)
            if started.staged:
                await _remove_remote_staged(executor, job.job.dir)

    tail = MetricsTail(MetricsSummary())

    def follow_job() -> Awaitable[JobStatus]:
        return follow(
            job, session.bus, tail, run_id=record.id, times=session.times, kind=JobKind.EXPORT
        )

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


async def after_training(session: Session, record: RunRecord) -> list[str]:
    """The lines of an in-job export, delivered once after the run came back (§B.5).

    Only with `[export] after_training` and a succeeded run; a problem is a warning, never a
    failure of the run. An export step that failed (its `export.failed`) is reported as the
    export's: a warning with its last message and a result line, until an export succeeds.
    """
    settings = session.settings.export
    if not settings.after_training or record.state is not RunState.SUCCEEDED:
        return []
    run_dir = session.runs.dir_of(record.id)
    failed = await trio.to_thread.run_sync(in_job_failure, record.id, run_dir)
    if failed is not None:
        log.warning("%s", failed)
        return [f"export: failed after training; retry with `overbrainer export {record.id}`"]
    try:
        delivered = await trio.to_thread.run_sync(
            deliver_in_job, record.id, run_dir, resolve_pin().tag
        )
    except (OSError, OverbrainerError) as error:
        log.warning("export: cannot deliver the GGUF of run %s: %s", record.id, error)
        return []
    if delivered is None:
        known = (run_dir / EXPORT_FILE).is_file()
        if not known:
            log.warning(
                "export: the job of run %s left no GGUF in runs/%s/%s: see runs/%s/job.log",
                record.id,
                record.id,
                GGUF_DIR,
                record.id,
            )
        return []
    return await delivery_lines(run_dir, delivered, settings.ollama_name)


def in_job_failure(run_id: str, run_dir: Path) -> str | None:
    """The warning of a training job's export that failed, None when it did not (or when an
    `overbrainer export` of the run has delivered a GGUF since). Blocking."""
    try:
        code = (run_dir / FAILED_FILE).read_text(encoding="utf-8", errors="replace").strip()
    except FileNotFoundError:
        return None
    except OSError as error:
        code = f"unknown ({error.strerror})"
    if latest_export(run_dir) is not None:
        return None
    why = _last_message(run_dir) or f"export.sh exited with code {code or 'unknown'}"
    return (
        f"export after training failed: {why} (see runs/{run_id}/job.log); "
        f"retry with `overbrainer export {run_id}`"
    )
