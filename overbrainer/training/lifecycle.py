"""A training run on a local or SSH target (§6): create, shielded start, raced follow, finish."""

from __future__ import annotations

import contextlib
import functools
import logging
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import attrs
import trio

from overbrainer.config.secrets import resolve_secret
from overbrainer.config.settings import Engine as ConfigEngine
from overbrainer.config.settings import Runtime, Settings, Target, Training
from overbrainer.events.bus import EventBus
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.error_groups import unwrapped
from overbrainer.model.errors import EXIT_INTERRUPTED, OverbrainerError, UsageError, WorkFailed
from overbrainer.model.job_status import JobStatus
from overbrainer.project.directory import Project
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
    ExecutorJob,
    JobRef,
    export_script,
    kind_of,
    resolve_pin,
)
from overbrainer.training import prepare
from overbrainer.training.axolotl_config import CONFIG_FILE, OUTPUT_DIR
from overbrainer.training.follow_job import (
    CANCEL_BOUND,
    FollowTimes,
    MetricsTail,
    follow,
    guard_stop,
)
from overbrainer.training.live_runs import live_runs, refuse_if_training, still_training
from overbrainer.training.outcome import (
    InvalidProof,
    Outcome,
    conclude,
    ended_state,
    local_summary,
    read_proof,
)
from overbrainer.training.retrieve import retrieve_checkpoint, retrieve_results
from overbrainer.training.run_store import (
    Container,
    Job,
    RunRecord,
    Runs,
    RunState,
    claim_dir,
    new_owner,
)
from overbrainer.training.runtime import (
    SECRET_NAMES,
    JobRequest,
    expand_venv,
    job_root,
    plan_job,
)
from overbrainer.training.summary import MetricsSummary
from overbrainer.training.target_access import (
    HostTarget,
    TrainTarget,
    open_executor,
    run_target,
    sampler_for,
)
from overbrainer.training.trainer_check import CannotTrain, check_trainer, checks_axolotl

log = logging.getLogger(__name__)

START_BOUND = 300.0
"""Seconds the shielded start may take (copying the data, linking a checkpoint, spawning)."""
REMOTE_START_BOUND = 1800.0
"""The same on a remote target, where the upload (a resumed run's checkpoint) takes longer."""
UPLOAD_SKIP = ("ssh", "pod.json")
"""What an upload leaves out of a run directory (keys and the pod record never leave here)."""


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

    @contextlib.asynccontextmanager
    async def open_target(
        self, name: str, target: HostTarget, interrupted: Callable[[], OverbrainerError]
    ) -> AsyncIterator[Executor]:
        """The target's executor, connected; `interrupted()` is raised on Ctrl-C meanwhile."""
        async with open_executor(
            name, target, self.runs.root, self.interrupt, interrupted
        ) as executor:
            yield executor

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


def job_ref(record: RunRecord) -> JobRef:
    """The recorded job of a run, as its executor finds it."""
    assert record.job is not None
    container = record.job.container
    box = None if container is None else (Engine(container.engine), container.name)
    return JobRef(record.job.dir, record.job.pid, box)


def warn_missing_engine(name: str, target: Target) -> None:
    """Say early when a container job here has no engine on PATH (it would fail with exit code
    127)."""
    kind = kind_of(target)
    if not kind.on_this_machine or kind.runtime(target) is not Runtime.DOCKER:
        return
    engine = (kind.engine(target) or ConfigEngine.DOCKER).value
    if shutil.which(engine) is None:
        log.warning("%s is not on PATH: the job of target `%s` will fail", engine, name)


async def check_can_train(
    name: str, target: TrainTarget, training: Training, executor: Executor
) -> None:
    """Refuse (CannotTrain, exit 2) a native target without `axolotl`, or without a GPU and
    the CPU settings, before a run exists."""
    if checks_axolotl(target):
        path = await check_trainer(name, target, training, executor)
        log.debug("target `%s` trains with %s", name, path)


async def refuse_if_training_cannot_start(
    settings: Settings, project: Project, interrupt: Interrupt
) -> None:
    """Before `run`'s stages: refuse at once (exit 2) when its training would find no Axolotl.

    A remote target that cannot be reached now is only warned about: training checks again.
    """
    if settings.training is None:
        return
    name = settings.training.target
    target = settings.targets.get(name)
    if target is not None:
        warn_missing_engine(name, target)
    if not checks_axolotl(target):
        return
    checked = run_target(settings, name)

    def interrupted() -> Detached:
        return Detached("interrupted before the first stage")

    try:
        async with open_executor(
            name, checked, Runs(project.runs).root, interrupt, interrupted
        ) as executor:
            await check_can_train(name, checked, settings.training, executor)
    except CannotTrain as error:
        raise CannotTrain(
            f"{error.message}; `overbrainer run --no-train` makes the dataset without training"
        ) from None
    except (OSError, WorkFailed) as error:
        log.warning(
            "cannot check target `%s` before the stages: %s; training checks it again", name, error
        )


async def warn_if_a_run_still_trains(settings: Settings, project: Project) -> None:
    """Before `run`'s stages: say at once when its training would be refused (a live run)."""
    if settings.training is None:
        return
    name = settings.training.target
    target = settings.targets.get(name)
    local = target is not None and kind_of(target).on_this_machine
    live = await trio.to_thread.run_sync(live_runs, Runs(project.runs), name, local)
    if live:
        log.warning(
            "%s; `run` trains after split only if it has ended by then",
            still_training(live, name).message,
        )


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
        local = kind_of(target).on_this_machine
        await trio.to_thread.run_sync(refuse_if_training, runs, name, local)
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


def not_started() -> Detached:
    """Ctrl-C before a run exists."""
    return Detached("interrupted before the run started")


def _create(session: Session, plan: StartPlan, executor: Executor, owner: str) -> RunRecord:
    """Claim the run here and on the target (blocking: run in a worker thread)."""
    runs = session.runs

    def accept(run_id: str, path: Path) -> bool:
        if not claim_dir(path, owner):
            return False
        if executor.local:
            return True
        return trio.from_thread.run(executor.claim, f"{executor.workdir}/{run_id}", owner)

    return runs.create(
        session.settings.project.name,
        plan.name,
        lambda run_id: f"{executor.workdir}/{run_id}",
        accept=accept,
        resumed_from=plan.resume_from,
    )


async def start_run(session: Session, plan: StartPlan, executor: Executor) -> RunRecord:
    """Create and start a run (§6.1 steps 4-5); Detached when Ctrl-C came meanwhile."""
    runs = session.runs
    owner = new_owner()
    try:
        record = await trio.to_thread.run_sync(_create, session, plan, executor, owner)
    except OSError as error:
        raise WorkFailed(f"cannot claim a run directory on target `{plan.name}`: {error}") from None
    log.info("train: run %s on target `%s`, in %s", record.id, plan.name, record.remote_dir)
    session.created(record.id)
    if plan.resume is not None:
        log.info(
            "train: run %s resumes from the snapshot of run %s (output/%s)",
            record.id,
            plan.resume_from,
            plan.resume.checkpoint,
        )
    started: RunRecord | None = None
    bound = START_BOUND if executor.local else REMOTE_START_BOUND
    with trio.move_on_after(bound, shield=True):
        started = await start_job(session, record, plan, executor)
    if started is None:
        failed = attrs.evolve(
            record, state=RunState.FAILED, message="the job did not start in time"
        )
        await trio.to_thread.run_sync(runs.save, failed)
        raise WorkFailed(f"run {record.id} failed: the job did not start in time")
    if session.interrupt.caught:
        raise detached(record.id, plan.name)
    return started


async def start_job(
    session: Session, record: RunRecord, plan: StartPlan, executor: Executor
) -> RunRecord:
    """Prepare the run's files, upload them and spawn its job; the `running` record (§6.1 step
    5). Call it shielded; a failure is saved as `failed` and raised as WorkFailed."""
    runs = session.runs
    run_dir = runs.dir_of(record.id)
    remote = record.remote_dir
    target, training, data = plan.target, plan.training, plan.data
    try:
        await trio.to_thread.run_sync(
            lambda: prepare.prepare_run(
                run_dir,
                training,
                job_root(target, remote),
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
        job=Job(remote, job.pid, container),
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
    async with unwrapped(), trio.open_nursery() as nursery:
        if record.snapshots:
            nursery.start_soon(lambda: guard_stop(job, times=session.times, requested=requested))
        status = await follow(
            job, session.bus, tail, run_id=record.id, times=session.times, sampler=sampler
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
