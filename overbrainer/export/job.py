"""`overbrainer export`: the export job on the run's target, followed, cancelled on Ctrl-C (§B.2).

The export reuses the training run machinery: its record is a run record in
`runs/<run>/exports/<export-id>/run.json` (IDs `export_YYYYMMDD-HHMMSS`), and it runs through
the one job lifecycle (`run_job`) like a training job; Ctrl-C cancels it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import attrs
import trio

from overbrainer.export.export_job import (
    ExportCancelled,
    ExportFollow,
    delivery_lines,
    has_model,
    last_message,
)
from overbrainer.export.plan import ExportPlan, ExportRequest
from overbrainer.export.record import EXPORTS_DIR
from overbrainer.export.start import (
    EXPORT_COMMAND,
    NEVER_UPLOADED,
    create_export,
    end_export,
    stage_model,
)
from overbrainer.export.start import Started as PodStarted
from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.model.job_kind import JobKind
from overbrainer.model.job_status import JobStatus
from overbrainer.storage import write_atomic
from overbrainer.targets import (
    CACHE_DIR,
    SCRIPT_FILE,
    Claim,
    Executor,
    JobNeeds,
    JobOpening,
    JobSpec,
    Machine,
    export_env,
    export_script,
    kind_of,
)
from overbrainer.training import (
    CONFIG_FILE,
    METRICS_ENV,
    METRICS_FILE,
    OUTPUT_DIR,
    START_BOUND,
    Container,
    Job,
    MetricsSummary,
    MetricsTail,
    NestedJob,
    RunRecord,
    RunState,
    Session,
    Started,
    cancel_job,
    follow,
    job_ref,
    nested_spec,
    pod_machine,
    run_job,
)

__all__ = ["ExportCancelled", "delivery_lines", "export_on_machine", "last_message"]

log = logging.getLogger(__name__)


@attrs.define
class ExportJob(ExportFollow):
    """A new export of a run's model: its record, the model staged where the machine lacks it,
    the script written, its job started nested in the run's directory."""

    plan: ExportPlan | None = None

    @property
    def needs(self) -> JobNeeds:
        """Nothing beyond the run's target."""
        return JobNeeds()

    def interrupted_before(self) -> OverbrainerError:
        """Ctrl-C before the export's job started."""
        return ExportCancelled(f"interrupted before the export of run {self.run.id} started")

    def _plan(self) -> ExportPlan:
        assert self.plan is not None, "a follow-only export starts nothing"
        return self.plan

    async def create(self, workdir: str, claim: Claim | None) -> str:
        """Claim `exports/export_<time>` beside the run's directory on its machine."""
        record = await create_export(
            self._plan(), self.request, f"{self.run.remote_dir.rstrip('/')}/{EXPORTS_DIR}"
        )
        return record.id

    def start_bound(self, machine: Machine) -> float:
        """The training start's bound."""
        return START_BOUND

    async def start(self, machine: Machine, job_id: str) -> Started:
        """Write the script, stage and upload what the machine lacks, start the job; the
        `running` record. A failure is recorded and raised."""
        exports, run, request, choice = self.exports, self.run, self.request, self._plan().choice
        export = await trio.to_thread.run_sync(exports.load, job_id)
        job_dir = exports.dir_of(export.id)
        remote = export.remote_dir
        try:
            if not machine.here:
                self.staged = not await has_model(machine, run.remote_dir, choice.model)
                if self.staged:
                    run_dir = exports.root.parent
                    await trio.to_thread.run_sync(stage_model, run_dir, job_dir, choice.model)
            await trio.to_thread.run_sync(write_atomic, job_dir / SCRIPT_FILE, export_script())
            model = OUTPUT_DIR if self.staged else f"../../{choice.model}"
            config = CONFIG_FILE if self.staged else f"../../{CONFIG_FILE}"
            tools = f"{machine.workdir.rstrip('/')}/{CACHE_DIR}"
            env = export_env(
                name=run.id, quantize=request.quantize, model=model, config=config, cache=tools
            )
            env[METRICS_ENV] = f"{remote}/{METRICS_FILE}"
            plan = machine.plan(export_spec(machine, env, run=run, export=export))
            await machine.stage(job_dir, remote, NEVER_UPLOADED)
            job = await machine.start(remote, plan, {})
        except (OSError, OverbrainerError) as error:
            message = error.message if isinstance(error, OverbrainerError) else str(error)
            await end_export(exports, export, RunState.FAILED, message, job_dir)
            raise WorkFailed(f"export {export.id} of run {run.id} failed: {message}") from None
        box = None if job.container is None else Container(job.container[0].value, job.container[1])
        running = attrs.evolve(
            export, state=RunState.RUNNING, job=Job(remote, job.pid, box, job.ref)
        )
        await trio.to_thread.run_sync(exports.save, running)
        return Started(running, job_dir, job, "the export job")

    async def not_started(self, job_id: str) -> OverbrainerError:
        """Record the export failed: its start ran past its bound."""
        export = await trio.to_thread.run_sync(self.exports.load, job_id)
        job_dir = self.exports.dir_of(job_id)
        await end_export(
            self.exports, export, RunState.FAILED, "the job did not start in time", job_dir
        )
        return WorkFailed(f"export {job_id} of run {self.run.id} failed: the job did not start")


def export_spec(
    machine: Machine, env: dict[str, str], *, run: RunRecord, export: RunRecord
) -> JobSpec:
    """The export job as a nested job of the run: natively in place; in a container that
    mounts the run directory and the tool cache and works in `exports/<export-id>`, so
    `../../<model>` is the run's model there too."""
    nested = NestedJob(
        run_id=run.id,
        run_dir=run.remote_dir,
        job_id=export.id,
        folder=f"{EXPORTS_DIR}/{export.id}",
        command=EXPORT_COMMAND,
        env=env,
        tools=f"{machine.workdir.rstrip('/')}/{CACHE_DIR}",
    )
    return nested_spec(machine, nested)


async def export_on_machine(
    session: Session, request: ExportRequest, plan: ExportPlan
) -> list[str]:
    """Export a run's model to GGUF on its target's machine and deliver it; the result lines
    (§B.5)."""
    job = ExportJob(session, plan.exports, plan.run, request, plan=plan)
    opening = JobOpening(
        target_name=plan.run.target,
        target=plan.target,
        needs=job.needs,
        create=job.create,
        local_root=session.runs.root,
        bus=session.bus,
        interrupt=session.interrupt,
        interrupted=job.interrupted_before,
    )
    return await run_job(job, kind_of(plan.target), opening)


Watch = Callable[[Callable[[], Awaitable[JobStatus]]], Awaitable[JobStatus | None]]
"""How the pod path runs the job's follow: raced against Ctrl-C beside its pod's guards."""


async def follow_and_deliver(
    session: Session,
    executor: Executor,
    started: PodStarted,
    request: ExportRequest,
    plan: ExportPlan,
    watch: Watch,
) -> list[str]:
    """Follow an export on a pod (Ctrl-C cancels it), bring its GGUF here and deliver it; the
    lines (the pod path's, until the Runpod kind runs on `run_job`)."""
    job = ExportFollow(session, plan.exports, plan.run, request, staged=started.staged)
    machine = pod_machine(executor)
    begun = Started(started.record, started.job_dir, job_ref(started.record), "the export job")
    tail = MetricsTail(MetricsSummary())
    followed = machine.followed(begun.job)
    status = await watch(
        lambda: follow(
            followed,
            session.bus,
            tail,
            run_id=begun.record.id,
            times=job.times,
            kind=JobKind.EXPORT,
        )
    )
    if status is None:
        await cancel_job(machine, begun)
        raise await job.interrupted(machine, begun)
    problem = await job.fetch(machine, begun, status)
    return await job.conclude(machine, begun, status, tail.summary, problem)
