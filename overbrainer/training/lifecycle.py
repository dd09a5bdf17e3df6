"""A training run on a local target (§6): create, shielded start, raced follow, finish."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import attrs
import trio

from overbrainer.config.secrets import resolve_secret
from overbrainer.config.settings import Engine as ConfigEngine
from overbrainer.config.settings import LocalTarget, Runtime, Settings, Target, Training
from overbrainer.events.bus import EventBus
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import EXIT_INTERRUPTED, OverbrainerError, UsageError, WorkFailed
from overbrainer.project.directory import Project
from overbrainer.system.sampler import LocalSampler
from overbrainer.targets.job_script import Engine
from overbrainer.targets.local import LocalJob, LocalRunJob, start_job
from overbrainer.training import prepare
from overbrainer.training.axolotl_config import CONFIG_FILE
from overbrainer.training.follow import CANCEL_BOUND, FollowTimes, MetricsTail, follow, guard_stop
from overbrainer.training.live_runs import live_runs, refuse_if_training, still_training
from overbrainer.training.outcome import Outcome, conclude, local_summary
from overbrainer.training.run_store import (
    Container,
    Job,
    RunRecord,
    Runs,
    RunState,
    claim_dir,
    new_owner,
)
from overbrainer.training.runtime import SECRET_NAMES, expand_venv, job_root, plan_job
from overbrainer.training.summary import MetricsSummary

log = logging.getLogger(__name__)

START_BOUND = 300.0
"""Seconds the shielded start may take (copying the data, linking a checkpoint, spawning)."""


class Detached(OverbrainerError):
    """Ctrl-C while following: the job keeps running; the message says how to follow it again."""

    exit_code = EXIT_INTERRUPTED


def detached(run_id: str, target: str) -> Detached:
    """The error a follow ends with when the user stops following."""
    return Detached(
        f"interrupted: run {run_id} keeps running on target `{target}`; "
        f"follow it again with `overbrainer train attach {run_id}`"
    )


@attrs.frozen
class Session:
    """What a training command works with: settings, paths, its bus and interrupt."""

    settings: Settings
    project: Project
    bus: EventBus
    interrupt: Interrupt
    times: FollowTimes = attrs.field(factory=FollowTimes.from_env)
    created: Callable[[str], None] = attrs.field(default=lambda run_id: None)
    """Told each new run ID while the start goes on (the front end's `run_created` result sink:
    the TUI follows the run; the CLI does nothing)."""

    @property
    def runs(self) -> Runs:
        """The project's `runs/`."""
        return Runs(self.project.runs)

    def training(self, what: str = "") -> Training:
        """`[training]`, or the spec's refusal."""
        if self.settings.training is None:
            raise UsageError(f"{what}no [training] section in overbrainer.toml")
        return self.settings.training


@attrs.frozen
class RunEnding:
    """How a run ended for the user: the lines for stdout (§6.6), then the error it fails with."""

    lines: tuple[str, ...]
    error: WorkFailed | None = None


def _has_examples(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def local_target(settings: Settings, name: str, *, keep_pod: bool = False) -> LocalTarget:
    """The `[targets.<name>]` a training run uses; only `local` ones run in this version."""
    target: Target | None = settings.targets.get(name)
    if target is None:
        raise UsageError(f"unknown target `{name}`")
    if keep_pod and target.kind != "runpod":
        raise UsageError("--keep-pod only applies to a runpod target")
    if not isinstance(target, LocalTarget):
        raise UsageError(
            f"target `{name}` is of kind `{target.kind}`: this overbrainer trains on `local` "
            "targets only"
        )
    return target


def job_handle(record: RunRecord, run_dir: Path) -> LocalRunJob:
    """The recorded job of a local run, found in `run_dir` (R is L on this machine)."""
    assert record.job is not None
    container = record.job.container
    box = None if container is None else (Engine(container.engine), container.name)
    return LocalRunJob(LocalJob(run_dir, record.job.pid), box)


def _warn_missing_axolotl(name: str, target: LocalTarget) -> None:
    """Say early when the job cannot find its program (it would fail with exit code 127)."""
    if target.runtime is Runtime.DOCKER:
        engine = (target.engine or ConfigEngine.DOCKER).value
        if shutil.which(engine) is None:
            log.warning("%s is not on PATH: the job of target `%s` will fail", engine, name)
        return
    venv = expand_venv(target.venv)
    if venv is not None:
        if not os.access(Path(venv) / "bin" / "axolotl", os.X_OK):
            log.warning(
                "%s/bin/axolotl is not an executable: the job of target `%s` will fail", venv, name
            )
    elif shutil.which("axolotl") is None:
        log.warning(
            "axolotl is not on PATH: the job of target `%s` will fail; install Axolotl or set "
            "targets.%s.venv",
            name,
            name,
        )


def warn_if_training_cannot_start(settings: Settings) -> None:
    """Before `run`'s stages: say at once when the training after split would fail to start."""
    if settings.training is None:
        return
    name = settings.training.target
    target = settings.targets.get(name)
    if isinstance(target, LocalTarget):
        _warn_missing_axolotl(name, target)


async def warn_if_a_run_still_trains(settings: Settings, project: Project) -> None:
    """Before `run`'s stages: say at once when its training would be refused (a live run)."""
    if settings.training is None:
        return
    name = settings.training.target
    live = await trio.to_thread.run_sync(live_runs, Runs(project.runs), name)
    if live:
        log.warning(
            "%s; `run` trains after split only if it has ended by then",
            still_training(live, name).message,
        )


async def _hf_token(settings: Settings) -> dict[str, str]:
    if settings.hf_token is None:
        return {}
    return {"HF_TOKEN": await resolve_secret(settings.hf_token, "hf_token")}


async def start_run(
    session: Session,
    *,
    target_name: str | None = None,
    resume_from: str | None = None,
    keep_pod: bool = False,
    force: bool = False,
) -> RunRecord:
    """Create and start a run (§6.1 steps 1-5); Detached when Ctrl-C came meanwhile.

    Refused (RunStillTraining, exit 2) while a run of this project still trains on the same
    target, unless `force`.
    """
    training = session.training()
    name = target_name or training.target
    target = local_target(session.settings, name, keep_pod=keep_pod)
    runs = session.runs
    if not force:
        await trio.to_thread.run_sync(refuse_if_training, runs, name)
    resume = (
        await trio.to_thread.run_sync(prepare.resume_source, runs, resume_from, training)
        if resume_from
        else None
    )
    _warn_missing_axolotl(name, target)
    for warning in prepare.start_warnings(training, hf_token=session.settings.hf_token is not None):
        log.warning("%s", warning)
    data = session.project.data if resume is None else resume.run_dir / "data"
    if not _has_examples(data / "train.jsonl"):
        shown = "data/train.jsonl" if resume is None else f"runs/{resume_from}/data/train.jsonl"
        raise prepare.NoTrainingData(f"{shown} has no example: run `overbrainer split` first")
    secrets = await session.interrupt.race(lambda: _hf_token(session.settings))
    if secrets is None:
        raise Detached("interrupted before the run started")
    owner = new_owner()
    record = await trio.to_thread.run_sync(
        lambda: runs.create(
            session.settings.project.name,
            name,
            lambda run_id: str((runs.root / run_id).resolve()),
            accept=lambda _, path: claim_dir(path, owner),
            resumed_from=resume_from if resume is not None else None,
        )
    )
    log.info("train: run %s on target `%s`, in %s", record.id, name, record.remote_dir)
    session.created(record.id)
    if resume is not None:
        log.info(
            "train: run %s resumes from the snapshot of run %s (output/%s)",
            record.id,
            resume_from,
            resume.checkpoint,
        )
    started: RunRecord | None = None
    with trio.move_on_after(START_BOUND, shield=True):
        started = await _start(session, record, target, training, data, resume, secrets)
    if started is None:
        failed = attrs.evolve(
            record, state=RunState.FAILED, message="the job did not start in time"
        )
        await trio.to_thread.run_sync(runs.save, failed)
        raise WorkFailed(f"run {record.id} failed: the job did not start in time")
    if session.interrupt.caught:
        raise detached(record.id, name)
    return started


async def _start(
    session: Session,
    record: RunRecord,
    target: LocalTarget,
    training: Training,
    data: Path,
    resume: prepare.ResumeSource | None,
    secrets: dict[str, str],
) -> RunRecord:
    runs = session.runs
    run_dir = Path(record.remote_dir)
    try:
        await trio.to_thread.run_sync(
            lambda: prepare.prepare_run(
                run_dir,
                training,
                job_root(target, str(run_dir)),
                data / "train.jsonl",
                data / "eval.jsonl",
                resume,
            )
        )
        plan = plan_job(
            target,
            run_id=record.id,
            run_dir=str(run_dir),
            cache=str((runs.root / ".hf-cache").resolve()),
            commands=prepare.job_commands(training),
            secrets=[name for name in SECRET_NAMES if name in secrets],
        )
        job = await start_job(run_dir, plan.commands, secrets)
    except (OSError, OverbrainerError) as error:
        message = error.message if isinstance(error, OverbrainerError) else str(error)
        failed = attrs.evolve(record, state=RunState.FAILED, message=message)
        await trio.to_thread.run_sync(runs.save, failed)
        raise WorkFailed(f"run {record.id} failed to start: {message}") from None
    container = None if plan.container is None else Container(*_container(plan.container))
    running = attrs.evolve(
        record,
        state=RunState.RUNNING,
        job=Job(str(run_dir), job.pid, container),
        snapshots=True,
    )
    try:
        await trio.to_thread.run_sync(runs.save, running)
    except OverbrainerError:
        with trio.move_on_after(CANCEL_BOUND):  # inside the start's shield
            await LocalRunJob(job, plan.container).cancel()
        raise
    return running


def _container(box: tuple[Engine, str]) -> tuple[str, str]:
    return box[0].value, box[1]


async def watch(session: Session, record: RunRecord, *, requested: bool = False) -> Outcome:
    """Follow a running run to its end and save how it ended; ended runs are summarized."""
    run_dir = session.runs.dir_of(record.id)
    if record.state is not RunState.RUNNING or record.job is None:
        summary = await trio.to_thread.run_sync(local_summary, run_dir)
        retrieved = (run_dir / "job.log").exists() and (
            record.snapshot is None or (run_dir / record.snapshot.checkpoint).is_dir()
        )
        return Outcome(record, summary, retrieved)
    job = job_handle(record, run_dir)
    tail = MetricsTail(MetricsSummary())
    sampler = LocalSampler(run_dir)
    async with trio.open_nursery() as nursery:
        if record.snapshots:
            nursery.start_soon(lambda: guard_stop(job, times=session.times, requested=requested))
        status = await follow(
            job, session.bus, tail, run_id=record.id, times=session.times, sampler=sampler
        )
        nursery.cancel_scope.cancel()
    # One thread for both, as one step: nothing can cancel between concluding and saving.
    ended = await trio.to_thread.run_sync(
        lambda: _save(session.runs, conclude(record, status, tail.summary, run_dir))
    )
    return Outcome(ended, tail.summary, True)


def _save(runs: Runs, record: RunRecord) -> RunRecord:
    # The follower knows most about the end (a snapshot proof, the metrics), so its record
    # wins; `update` only orders it with a `train cancel` writing beside it.
    return runs.update(record.id, lambda _: record)


async def follow_to_end(session: Session, record: RunRecord, *, requested: bool = False) -> Outcome:
    """`watch` raced against Ctrl-C: Detached when the user stops following."""
    outcome = await session.interrupt.race(lambda: watch(session, record, requested=requested))
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
