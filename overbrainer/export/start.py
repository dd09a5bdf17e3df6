"""The start of an export job (§B.2): its record claimed, the model staged when the target lacks
it, the script written, the job's commands (natively on a pod, nested in the run's job elsewhere)
spawned, shielded."""

from __future__ import annotations

import errno
import logging
import os
import shutil
from pathlib import Path

import attrs
import trio

from overbrainer.export.deliver import remove_staged
from overbrainer.export.plan import ExportPlan, ExportRequest, ModelChoice
from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.model.train_metric import JobStage
from overbrainer.storage import write_atomic
from overbrainer.targets import (
    CACHE_DIR,
    CACHE_ENV,
    POD_LOCAL,
    SCRIPT_FILE,
    Command,
    Executor,
    export_env,
    export_script,
    native_commands,
    pod_settings,
    quote,
)
from overbrainer.training import (
    CONFIG_FILE,
    METRICS_ENV,
    METRICS_FILE,
    OUTPUT_DIR,
    Container,
    Job,
    JobPlan,
    RunRecord,
    Runs,
    RunState,
    TrainTarget,
    expand_venv,
)

log = logging.getLogger(__name__)

EXPORT_SLUG = "export"
"""The ID prefix of exports: `export_YYYYMMDD-HHMMSS`."""


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
    executor: Executor,
    env_file: str | None = None,
) -> JobPlan:
    """The export job's native commands on a pod (`ExportJob` plans it on other machines)."""
    tools = f"{executor.workdir.rstrip('/')}/{CACHE_DIR}"
    return JobPlan(
        job_commands(pod_settings(target), {**env, CACHE_ENV: tools}, executor.home, env_file)
    )


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
        plan = export_job(target, env, executor=executor, env_file=env_file)
        if not executor.local:
            await executor.upload(job_dir, remote, NEVER_UPLOADED)
        job = await executor.spawn(remote, plan.commands, {})
    except (OSError, OverbrainerError) as error:
        message = error.message if isinstance(error, OverbrainerError) else str(error)
        await end_export(exports, export, RunState.FAILED, message, job_dir)
        raise WorkFailed(f"export {export.id} of run {run.id} failed: {message}") from None
    box = None if plan.container is None else Container(plan.container[0].value, plan.container[1])
    running = attrs.evolve(export, state=RunState.RUNNING, job=Job(remote, job.pid, box, job.ref))
    await trio.to_thread.run_sync(exports.save, running)
    return Started(running, job_dir, staged)


async def end_export(
    exports: Runs, record: RunRecord, state: RunState, message: str | None, job_dir: Path
) -> RunRecord:
    """Record how the export ended, what was staged for its job removed; the ended record."""

    def save() -> RunRecord:
        remove_staged(job_dir)
        ended = attrs.evolve(record, state=state, message=message)
        exports.save(ended)
        return ended

    return await trio.to_thread.run_sync(save)
