"""Training as a job kind (§6.1-§6.2): its run claimed here and on the machine, its files
prepared and staged, its job started; Ctrl-C detaches; its results retrieved and checked."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import attrs
import trio

from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.model.job_kind import JobKind as JobType
from overbrainer.model.job_status import JobStatus
from overbrainer.storage import write_atomic
from overbrainer.targets import (
    CACHE_DIR,
    CONFIG_ENV,
    MODEL_ENV,
    NAME_ENV,
    QUANTIZE_ENV,
    SCRIPT_FILE,
    Claim,
    Executor,
    JobNeeds,
    JobOpening,
    JobSpec,
    Machine,
    RecordedJob,
    export_script,
    kind_of,
    resolve_pin,
)
from overbrainer.training import prepare
from overbrainer.training.axolotl_config import CONFIG_FILE, OUTPUT_DIR
from overbrainer.training.follow_job import CANCEL_BOUND, FollowTimes
from overbrainer.training.job_kind import Interruption, Started, record_failed
from overbrainer.training.job_lifecycle import follow_to_end, run_job
from overbrainer.training.outcome import InvalidProof, Outcome, conclude, ended_state, read_proof
from overbrainer.training.preflight import check_can_train
from overbrainer.training.retrieve import CHECKPOINTS, RESULTS
from overbrainer.training.run_store import (
    Container,
    Job,
    RunRecord,
    Runs,
    RunState,
    claim_dir,
    new_owner,
)
from overbrainer.training.run_store import job_ref as job_ref
from overbrainer.training.runtime import SECRET_NAMES
from overbrainer.training.session import Session, detached, not_started
from overbrainer.training.start import (
    REMOTE_START_BOUND,
    START_BOUND,
    UPLOAD_SKIP,
    StartPlan,
)
from overbrainer.training.summary import MetricsSummary

log = logging.getLogger(__name__)

SNAPSHOTS = JobNeeds(snapshots=True)
"""What a run asks of a machine that exists already: honour snapshot requests."""


def started_run(runs: Runs, record: RunRecord) -> Started:
    """A recorded running run as the lifecycle follows it."""
    return Started(record, runs.dir_of(record.id), job_ref(record), f"run {record.id}")


@attrs.frozen
class TrainFollow:
    """Following a run to its end: detached by Ctrl-C, results fetched in two passes."""

    session: Session
    target: str
    type: JobType | None = None
    on_interrupt: Interruption = Interruption.DETACH
    sampled: bool = True
    end_fails: bool = True
    """A run's machine left after its end fails the command (a pod that costs on)."""

    @property
    def times(self) -> FollowTimes:
        """The follow clocks with the target's reconnect budget."""
        return self.session.follow_times(self.target)

    async def fail(self, job_id: str, message: str) -> None:
        """Record the run failed."""
        await record_failed(self.session.runs, job_id, message)

    async def interrupted(self, machine: Machine, started: Started) -> OverbrainerError:
        """The run goes on: the hint to follow it again."""
        return detached(started.record.id, started.record.target)

    async def fetch(self, machine: Machine, started: Started, status: JobStatus) -> str | None:
        """Pass 1 (output, metrics, log, proof), then a stopped run's checkpoint; nothing
        here. The problem, None when all came and matched."""
        if machine.here:
            return None
        try:
            await machine.fetch(started.job, started.job_dir, RESULTS, CHECKPOINTS)
            try:
                proof = await trio.to_thread.run_sync(read_proof, started.job_dir)
            except InvalidProof:
                proof = None
            if proof is not None:
                await machine.fetch(
                    started.job, started.job_dir, (proof.checkpoint, "snapshot.json")
                )
        except (OSError, OverbrainerError) as error:
            return error.message if isinstance(error, OverbrainerError) else str(error)
        return None

    async def conclude(
        self,
        machine: Machine,
        started: Started,
        status: JobStatus,
        summary: MetricsSummary,
        problem: str | None,
    ) -> Outcome:
        """Record how the run ended (the follower's record wins over a cancel beside it)."""
        runs = self.session.runs
        record = started.record
        if problem is None:
            # One thread for both, as one step: nothing can cancel between concluding and saving.
            ended = await trio.to_thread.run_sync(
                lambda: _save(runs, conclude(record, status, summary, started.job_dir))
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
        failed = attrs.evolve(record, state=state, message=message)
        await trio.to_thread.run_sync(lambda: _save(runs, failed))
        return Outcome(failed, summary, False)


def _save(runs: Runs, record: RunRecord) -> RunRecord:
    # The follower knows most about the end (a snapshot proof, the metrics), so its record
    # wins; `update` only orders it with a `train cancel` writing beside it.
    return runs.update(record.id, lambda _: record)


@attrs.frozen
class TrainJob(TrainFollow):
    """A new training run: claimed, prepared, staged and started on its machine."""

    plan: StartPlan | None = None
    owner: str = ""
    needs: JobNeeds = SNAPSHOTS
    """A job that honours snapshot requests (and what a machine made for it must have)."""

    def interrupted_before(self) -> OverbrainerError:
        """Ctrl-C before the run exists."""
        return not_started()

    def _plan(self) -> StartPlan:
        assert self.plan is not None, "a follow-only TrainJob starts nothing"
        return self.plan

    async def create(self, workdir: str, claim: Claim | None) -> str:
        """Claim the run here, and R on the machine when it has its own (a taken one moves
        to the next ID)."""
        plan, session, owner = self._plan(), self.session, self.owner

        def accept(run_id: str, path: Path) -> bool:
            if not claim_dir(path, owner):
                return False
            if claim is None:
                return True
            return trio.from_thread.run(claim, f"{workdir}/{run_id}", owner)

        def create() -> RunRecord:
            return session.runs.create(
                session.settings.project.name,
                plan.name,
                lambda run_id: f"{workdir}/{run_id}",
                accept=accept,
                resumed_from=plan.resume_from,
            )

        try:
            record = await trio.to_thread.run_sync(create)
        except OSError as error:
            raise WorkFailed(
                f"cannot claim a run directory on target `{plan.name}`: {error}"
            ) from None
        log.info("train: run %s on target `%s`, in %s", record.id, plan.name, record.remote_dir)
        session.created(record.id)
        if plan.resume is not None:
            log.info(
                "train: run %s resumes from the snapshot of run %s (output/%s)",
                record.id,
                plan.resume_from,
                plan.resume.checkpoint,
            )
        return record.id

    def start_bound(self, machine: Machine) -> float:
        """Longer on a machine the data (a resumed run's checkpoint) is uploaded to."""
        return START_BOUND if machine.here else REMOTE_START_BOUND

    async def start(self, machine: Machine, job_id: str) -> Started:
        """Prepare the run's files, stage them and start its job; the `running` record (§6.1
        step 5). A failure is saved as `failed` and raised as WorkFailed."""
        plan, runs = self._plan(), self.session.runs
        record = await trio.to_thread.run_sync(runs.load, job_id)
        run_dir = runs.dir_of(record.id)
        remote = record.remote_dir
        try:
            spec = await self._spec(machine, record, run_dir)
            await machine.stage(run_dir, remote, UPLOAD_SKIP)
            job = await machine.start(remote, machine.plan(spec), plan.secrets)
        except (OSError, OverbrainerError) as error:
            message = error.message if isinstance(error, OverbrainerError) else str(error)
            failed = attrs.evolve(record, state=RunState.FAILED, message=message)
            await trio.to_thread.run_sync(runs.save, failed)
            raise WorkFailed(f"run {record.id} failed to start: {message}") from None
        box = job.container
        container = None if box is None else Container(box[0].value, box[1])
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
                await machine.followed(job).cancel()
            raise
        return Started(running, run_dir, job, f"run {record.id}")

    async def _spec(self, machine: Machine, record: RunRecord, run_dir: Path) -> JobSpec:
        """Write the run's files (axolotl config, data, the in-job export's script); its job."""
        plan, settings = self._plan(), self.session.settings
        remote = record.remote_dir
        await trio.to_thread.run_sync(
            lambda: prepare.prepare_run(
                run_dir,
                plan.training,
                machine.job_root(remote),
                plan.data / "train.jsonl",
                plan.data / "eval.jsonl",
                plan.resume,
            )
        )
        export = settings.export
        extra_env: dict[str, str] = {}
        if export.after_training:
            await trio.to_thread.run_sync(write_atomic, run_dir / SCRIPT_FILE, export_script())
            extra_env = {
                NAME_ENV: record.id,
                QUANTIZE_ENV: export.quantize,
                MODEL_ENV: OUTPUT_DIR,
                CONFIG_ENV: CONFIG_FILE,
                **resolve_pin().job_env(),
            }
        return JobSpec(
            run_id=record.id,
            root=remote,
            cache=f"{machine.workdir}/.hf-cache",
            commands=prepare.job_commands(plan.training, export=export.after_training),
            env={**prepare.job_env(machine.job_root(remote)), **extra_env},
            secrets=[name for name in SECRET_NAMES if name in plan.secrets],
            tools=f"{machine.workdir}/{CACHE_DIR}" if export.after_training else None,
            venv_on_path=export.after_training,
        )

    async def not_started(self, job_id: str) -> OverbrainerError:
        """Record the run failed: its start ran past its bound."""
        runs = self.session.runs
        record = await trio.to_thread.run_sync(runs.load, job_id)
        failed = attrs.evolve(
            record, state=RunState.FAILED, message="the job did not start in time"
        )
        await trio.to_thread.run_sync(runs.save, failed)
        return WorkFailed(f"run {job_id} failed: the job did not start in time")


async def train_on_machine(
    session: Session, plan: StartPlan, needs: JobNeeds = SNAPSHOTS
) -> Outcome:
    """Create and start a run on its target's machine and follow it to its end (§6.1-§6.2);
    Detached when the user stops following."""
    job = TrainJob(session, plan.name, plan=plan, owner=new_owner(), needs=needs)

    async def check(executor: Executor) -> None:
        await check_can_train(plan.name, plan.target, plan.training, executor)

    opening = JobOpening(
        target_name=plan.name,
        target=plan.target,
        needs=job.needs,
        create=job.create,
        local_root=session.runs.root,
        bus=session.bus,
        interrupt=session.interrupt,
        interrupted=job.interrupted_before,
        settings=session.settings,
        check=check,
    )
    return await run_job(job, kind_of(plan.target), opening)


def recorded_run(
    session: Session,
    record: RunRecord,
    interrupted: Callable[[], OverbrainerError],
    action: str = "attach",
) -> RecordedJob:
    """A recorded running run, for its kind to reach its machine again to `action` it."""
    target = session.settings.targets[record.target]
    return RecordedJob(
        record.target,
        target,
        job_ref(record),
        session.runs.dir_of(record.id),
        session.bus,
        session.interrupt,
        interrupted,
        settings=session.settings,
        action=action,
    )


async def follow_recorded(
    session: Session, machine: Machine, record: RunRecord, *, requested: bool = False
) -> Outcome:
    """Follow a recorded running run on its reached machine to its end (`train attach`,
    `train stop`); Detached when the user stops following."""
    return await follow_to_end(
        TrainFollow(session, record.target),
        machine,
        started_run(session.runs, record),
        session.bus,
        session.interrupt,
        requested=requested,
    )
