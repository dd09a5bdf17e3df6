"""`overbrainer export`: the export job on the run's target, followed, cancelled on Ctrl-C (§B.2).

The export reuses the training run machinery: its record is a run record in
`runs/<run>/exports/<export-id>/run.json` (IDs `export_YYYYMMDD-HHMMSS`), and it runs through
the one job lifecycle (`run_job`) like a training job; Ctrl-C cancels it.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Sequence

import attrs
import trio

from overbrainer.export.export_job import (
    Delivery,
    ExportFollow,
    delivery_lines,
    has_model,
    last_message,
)
from overbrainer.export.plan import ExportCancelled, ExportPlan, ExportRequest
from overbrainer.export.record import BASE, EXPORTS_DIR, gguf_stem
from overbrainer.export.start import (
    EXPORT_COMMAND,
    NEVER_UPLOADED,
    create_export,
    end_export,
    stage_model,
)
from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.storage import write_atomic
from overbrainer.targets import (
    CACHE_DIR,
    SCRIPT_FILE,
    Claim,
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
    NestedJob,
    RunRecord,
    RunState,
    Session,
    Started,
    nested_spec,
    run_job,
)

__all__ = [
    "Delivery",
    "ExportCancelled",
    "delivery_lines",
    "export_on_machine",
    "last_message",
]

log = logging.getLogger(__name__)


@attrs.define
class ExportJob(ExportFollow):
    """A new export of a run's model: its record, the model staged where the machine lacks it,
    the script written, its job started nested in the run's directory."""

    plan: ExportPlan | None = None
    vram_floor_gb: int | None = None
    """The VRAM a machine made for the export needs (its base model's shape says)."""

    @property
    def needs(self) -> JobNeeds:
        """Its directory beside the run's on a machine that holds the run, the VRAM floor and
        `--keep-pod` for one made for it."""
        return JobNeeds(
            vram_floor_gb=self.vram_floor_gb,
            keep=self.request.keep_pod,
            nested_in=self._exports_root(),
        )

    def _exports_root(self) -> str:
        return f"{self.run.remote_dir.rstrip('/')}/{EXPORTS_DIR}"

    def interrupted_before(self) -> OverbrainerError:
        """Ctrl-C before the export's job started."""
        return ExportCancelled(f"interrupted before the export of run {self.run.id} started")

    def _plan(self) -> ExportPlan:
        assert self.plan is not None, "a follow-only export starts nothing"
        return self.plan

    async def create(self, workdir: str, claim: Claim | None) -> str:
        """Claim `export_<time>` under `workdir` (the run's `exports/` on a machine that holds
        the run)."""
        record = await create_export(self._plan(), self.request, workdir)
        return record.id

    def start_bound(self, machine: Machine) -> float:
        """The training start's bound."""
        return START_BOUND

    async def start(self, machine: Machine, job_id: str) -> Started:
        """Write the script, stage and upload what the machine lacks, start the job; the
        `running` record. A failure is recorded and raised."""
        exports, run, request, plan = self.exports, self.run, self.request, self._plan()
        choice, base = plan.choice, plan.choice.which == BASE
        export = await trio.to_thread.run_sync(exports.load, job_id)
        job_dir = exports.dir_of(export.id)
        remote = export.remote_dir
        try:
            # The base model is used where the target has it (as its training did), or
            # downloaded there: never staged from here.
            if not machine.here and not base:
                self.staged = not await has_model(machine, run.remote_dir, choice.model)
                if self.staged:
                    run_dir = exports.root.parent
                    await trio.to_thread.run_sync(stage_model, run_dir, job_dir, choice.model)
            await trio.to_thread.run_sync(write_atomic, job_dir / SCRIPT_FILE, export_script())
            model = choice.model
            if not base:
                model = OUTPUT_DIR if self.staged else f"../../{choice.model}"
            config = CONFIG_FILE if self.staged else f"../../{CONFIG_FILE}"
            tools = f"{machine.workdir.rstrip('/')}/{CACHE_DIR}"
            env = export_env(
                name=gguf_stem(run.id, choice.which),
                quantize=request.quantize,
                model=model,
                config=config,
                cache=tools,
                base=base,
            )
            env[METRICS_ENV] = f"{remote}/{METRICS_FILE}"
            secrets = sorted(plan.secrets)
            # Beside the run's directory, a job nested in it; in its own directory on a
            # machine made for it (the model staged there), a job of its own.
            nested = posixpath.dirname(remote.rstrip("/")) == self._exports_root()
            spec = (
                export_spec(machine, env, run=run, export=export, secrets=secrets)
                if nested
                else own_spec(machine, env, export=export, tools=tools, secrets=secrets)
            )
            await machine.stage(job_dir, remote, NEVER_UPLOADED)
            job = await machine.start(remote, machine.plan(spec), plan.secrets)
        except (OSError, OverbrainerError) as error:
            message = error.message if isinstance(error, OverbrainerError) else str(error)
            await end_export(exports, export, RunState.FAILED, message, job_dir)
            raise WorkFailed(f"export {export.id} of run {run.id} failed: {message}") from None
        box = None if job.container is None else Container(job.container[0].value, job.container[1])
        running = attrs.evolve(
            export, state=RunState.RUNNING, job=Job(remote, job.pid, box, job.ref)
        )
        await trio.to_thread.run_sync(exports.save, running)
        subject = "the export job" if nested else f"export {export.id}"
        return Started(running, job_dir, job, subject, disposable=True)

    async def not_started(self, job_id: str) -> OverbrainerError:
        """Record the export failed: its start ran past its bound."""
        export = await trio.to_thread.run_sync(self.exports.load, job_id)
        job_dir = self.exports.dir_of(job_id)
        await end_export(
            self.exports, export, RunState.FAILED, "the job did not start in time", job_dir
        )
        return WorkFailed(f"export {job_id} of run {self.run.id} failed: the job did not start")


def export_spec(
    machine: Machine,
    env: dict[str, str],
    *,
    run: RunRecord,
    export: RunRecord,
    secrets: Sequence[str] = (),
) -> JobSpec:
    """The export job as a nested job of the run: natively in place; in a container that
    mounts the run directory and the tool cache and works in `exports/<export-id>`, so
    `../../<model>` is the run's model there too. `secrets`: names passed through to it."""
    nested = NestedJob(
        run_id=run.id,
        run_dir=run.remote_dir,
        job_id=export.id,
        folder=f"{EXPORTS_DIR}/{export.id}",
        command=EXPORT_COMMAND,
        env=env,
        tools=f"{machine.workdir.rstrip('/')}/{CACHE_DIR}",
    )
    return attrs.evolve(nested_spec(machine, nested), secrets=tuple(secrets))


def own_spec(
    machine: Machine,
    env: dict[str, str],
    *,
    export: RunRecord,
    tools: str,
    secrets: Sequence[str] = (),
) -> JobSpec:
    """The export job in its own directory R (a machine made for it): `sh export.sh` there."""
    return JobSpec(
        run_id=export.id,
        root=export.remote_dir,
        cache=f"{machine.workdir.rstrip('/')}/.hf-cache",
        commands=[EXPORT_COMMAND],
        env=env,
        secrets=tuple(secrets),
        tools=tools,
    )


async def export_on_machine(
    session: Session, request: ExportRequest, plan: ExportPlan, vram_floor_gb: int | None = None
) -> Delivery:
    """Export a run's model to GGUF on its target's machine and deliver it; its lines (§B.5)
    and what it wrote."""
    job = ExportJob(
        session, plan.exports, plan.run, request, plan=plan, vram_floor_gb=vram_floor_gb
    )
    opening = JobOpening(
        target_name=plan.run.target,
        target=plan.target,
        needs=job.needs,
        create=job.create,
        local_root=session.runs.root,
        job_dirs=plan.exports.root,
        bus=session.bus,
        interrupt=session.interrupt,
        interrupted=job.interrupted_before,
        settings=session.settings,
    )
    return await run_job(job, kind_of(plan.target), opening)
