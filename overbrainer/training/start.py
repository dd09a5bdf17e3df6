"""The start of a training run (§6.1): checked before anything connects, then claimed here and on
the target, its files prepared and uploaded and its job spawned, shielded."""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import attrs
import trio

from overbrainer.config.secrets import resolve_secret
from overbrainer.config.settings import Runtime, Settings, Training
from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.storage import write_atomic
from overbrainer.targets import (
    CACHE_DIR,
    CONFIG_ENV,
    MODEL_ENV,
    NAME_ENV,
    QUANTIZE_ENV,
    SCRIPT_FILE,
    Engine,
    Executor,
    export_script,
    kind_of,
    resolve_pin,
)
from overbrainer.training import prepare
from overbrainer.training.axolotl_config import CONFIG_FILE, OUTPUT_DIR
from overbrainer.training.follow_job import CANCEL_BOUND
from overbrainer.training.live_runs import refuse_if_training
from overbrainer.training.preflight import warn_missing_engine
from overbrainer.training.run_store import (
    Container,
    Job,
    RunRecord,
    RunState,
)
from overbrainer.training.runtime import (
    SECRET_NAMES,
    JobRequest,
    expand_venv,
    plan_job,
)
from overbrainer.training.session import Detached, Session
from overbrainer.training.target_access import TrainTarget, run_target

log = logging.getLogger(__name__)

START_BOUND = 300.0
"""Seconds the shielded start may take (copying the data, linking a checkpoint, spawning)."""
REMOTE_START_BOUND = 1800.0
"""The same on a remote target, where the upload (a resumed run's checkpoint) takes longer."""
UPLOAD_SKIP = ("ssh", "pod.json")
"""What an upload leaves out of a run directory (keys and the pod record never leave here)."""


def _has_examples(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


async def _hf_token(settings: Settings) -> dict[str, str]:
    if settings.hf_token is None:
        return {}
    return {"HF_TOKEN": await resolve_secret(settings.hf_token, "hf_token")}


@attrs.frozen
class StartPlan:
    """A new run checked before anything connects: its target, settings, data and secrets."""

    name: str
    target: TrainTarget
    training: Training
    resume: prepare.ResumeSource | None
    resume_from: str | None
    data: Path
    secrets: dict[str, str]


async def plan_start(
    session: Session,
    *,
    target_name: str | None = None,
    resume_from: str | None = None,
    keep_pod: bool = False,
    force: bool = False,
) -> StartPlan:
    """The checks of §6.1 steps 1-3 before the target is reached; the secrets resolved (raced).

    Refused (RunStillTraining, exit 2) while a run of this project still trains on the same
    target, unless `force`.
    """
    training = session.training()
    name = target_name or training.target
    target = run_target(session.settings, name, keep_pod=keep_pod)
    runs = session.runs
    if not force:
        await trio.to_thread.run_sync(refuse_if_training, runs, name, target)
    resume = (
        await trio.to_thread.run_sync(prepare.resume_source, runs, resume_from, training)
        if resume_from
        else None
    )
    warn_missing_engine(name, target)
    settings = session.settings
    warnings = await trio.to_thread.run_sync(
        functools.partial(
            prepare.start_warnings,
            training,
            hf_token=settings.hf_token is not None,
            push_after=settings.hub.after_training,
        )
    )  # reads a local base model's chat template
    for warning in warnings:
        log.warning("%s", warning)
    data = session.project.data if resume is None else resume.run_dir / "data"
    if not _has_examples(data / "train.jsonl"):
        shown = "data/train.jsonl" if resume is None else f"runs/{resume_from}/data/train.jsonl"
        raise prepare.NoTrainingData(f"{shown} has no example: run `overbrainer split` first")
    secrets = await session.interrupt.race(lambda: _hf_token(session.settings))
    if secrets is None:
        raise Detached("interrupted before the run started")
    return StartPlan(name, target, training, resume, resume_from if resume else None, data, secrets)


async def start_job(
    session: Session, record: RunRecord, plan: StartPlan, executor: Executor
) -> RunRecord:
    """Prepare the run's files, upload them and spawn its job on a pod; the `running` record
    (§6.1 step 5). Call it shielded; a failure is saved as `failed` and raised as WorkFailed.
    (`TrainJob.start` on a Machine once the Runpod kind runs on `run_job`.)"""
    runs = session.runs
    run_dir = runs.dir_of(record.id)
    remote = record.remote_dir
    target, training, data = plan.target, plan.training, plan.data
    try:
        await trio.to_thread.run_sync(
            lambda: prepare.prepare_run(
                run_dir,
                training,
                remote,  # natively on a pod: R as the job sees it
                data / "train.jsonl",
                data / "eval.jsonl",
                plan.resume,
            )
        )
        cache = f"{executor.workdir}/.hf-cache"
        export = session.settings.export
        extra_env: dict[str, str] = {}
        if export.after_training:
            await trio.to_thread.run_sync(write_atomic, run_dir / SCRIPT_FILE, export_script())
            extra_env = in_job_export_env(record.id, export.quantize, target, executor.home)
        job_plan = plan_job(
            target,
            JobRequest(
                run_id=record.id,
                run_dir=remote,
                cache=cache,
                commands=prepare.job_commands(training, export=export.after_training),
                secrets=[name for name in SECRET_NAMES if name in plan.secrets],
                home=None if executor.local else executor.home,
                extra_env=extra_env,
                tools=f"{executor.workdir}/{CACHE_DIR}" if export.after_training else None,
            ),
        )
        if not executor.local:
            await executor.upload(run_dir, remote, UPLOAD_SKIP)
        job = attrs.evolve(
            await executor.spawn(remote, job_plan.commands, plan.secrets),
            container=job_plan.container,
        )
    except (OSError, OverbrainerError) as error:
        message = error.message if isinstance(error, OverbrainerError) else str(error)
        failed = attrs.evolve(record, state=RunState.FAILED, message=message)
        await trio.to_thread.run_sync(runs.save, failed)
        raise WorkFailed(f"run {record.id} failed to start: {message}") from None
    container = None if job.container is None else Container(*_container(job.container))
    running = attrs.evolve(
        record,
        state=RunState.RUNNING,
        job=Job(remote, job.pid, container, job.ref),
        snapshots=True,
    )
    try:
        await trio.to_thread.run_sync(runs.save, running)
    except OverbrainerError:
        with trio.move_on_after(CANCEL_BOUND):  # inside the start's shield
            await executor.cancel(job)
        raise
    return running


def in_job_export_env(run_id: str, quantize: str, target: TrainTarget, home: str) -> dict[str, str]:
    """The export variables of a training job that exports after the merge (§B.1)."""
    env = {
        NAME_ENV: run_id,
        QUANTIZE_ENV: quantize,
        MODEL_ENV: OUTPUT_DIR,
        CONFIG_ENV: CONFIG_FILE,
        **resolve_pin().job_env(),
    }
    native = kind_of(target).runtime(target) is Runtime.NATIVE
    venv = expand_venv(target.venv, home) if native else None
    if venv is not None:  # export.sh runs `python3` and `axolotl` from the target's venv
        env["PATH"] = f"{venv.rstrip('/')}/bin"
    return env


def _container(box: tuple[Engine, str]) -> tuple[str, str]:
    return box[0].value, box[1]
