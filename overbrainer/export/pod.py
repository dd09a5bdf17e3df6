"""An export of a run on a Runpod target (§B.2): a new pod for the job, the model and config
staged into the export directory and uploaded, the GGUF brought here and delivered as on a local
target, the pod deleted after the job (kept with `--keep-pod`)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio
import yaml

from overbrainer.export.job import ExportCancelled, follow_and_deliver
from overbrainer.export.plan import ExportPlan, ExportRequest
from overbrainer.export.start import ExportStart, create_export, start_export
from overbrainer.model.errors import OverbrainerError
from overbrainer.model.job_status import JobStatus
from overbrainer.targets import (
    JOB_ENV,
    Ended,
    Ending,
    JobNeeds,
    JobOpening,
    export_sizing,
    open_pod_machine,
    pod_path,
)
from overbrainer.training import (
    CONFIG_FILE,
    RunRecord,
    Session,
    failing,
    follow_guarded,
    not_started,
)

log = logging.getLogger(__name__)

NO_BASE = f"the run's {CONFIG_FILE} names no base_model"


def base_model_of(run_dir: Path) -> str | None:
    """`base_model` of the run's axolotl.yaml, if it names one (blocking)."""
    try:
        raw: Any = yaml.safe_load((run_dir / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return None
    base = raw.get("base_model") if isinstance(raw, dict) else None
    return base if isinstance(base, str) else None


async def export_on_pod(session: Session, request: ExportRequest, plan: ExportPlan) -> list[str]:
    """The export job on a new pod of the run's Runpod target; the delivery lines (§B.5)."""
    target = plan.target
    run, exports, interrupt = plan.run, plan.exports, session.interrupt
    run_dir = session.runs.dir_of(run.id)
    base = await trio.to_thread.run_sync(base_model_of, run_dir)
    merge = await trio.Path(run_dir / plan.choice.model / "adapter_config.json").is_file()
    sizing = await interrupt.race(
        lambda: export_sizing(session.settings, target, base, merge, request.quantize, NO_BASE)
    )
    if interrupt.caught:
        raise ExportCancelled(f"interrupted before the export of run {run.id} started")
    created: list[RunRecord] = []

    async def create(workdir: str, claim: object) -> str:
        created.append(await create_export(plan, request, workdir))
        return created[0].id

    async def fail(message: str) -> None:
        await failing(exports, created[0])(message)

    opening = JobOpening(
        run.target,
        target,
        JobNeeds(vram_floor_gb=sizing, keep=request.keep_pod),
        create,
        exports.root,
        session.bus,
        interrupt,
        not_started,
        settings=session.settings,
        fail=fail,
    )
    async with open_pod_machine(opening) as machine:
        export, executor = created[0], machine.executor
        started = await machine.start_job(
            lambda: start_export(
                ExportStart(
                    exports,
                    export,
                    request,
                    run,
                    plan.choice,
                    target,
                    executor,
                    env_file=pod_path(JOB_ENV),
                )
            ),
            fail,
        )

        async def watch(follow_job: Callable[[], Awaitable[JobStatus]]) -> JobStatus | None:
            return await follow_guarded(
                interrupt,
                machine,
                follow_job,
                failing(exports, started.record, update=True),
                machine.subject,
            )

        try:
            lines = await follow_and_deliver(session, executor, started, request, plan, watch)
        except ExportCancelled:
            await machine.end(Ended(Ending.CANCELLED))
            raise
        except (OverbrainerError, OSError):
            problem = await machine.end(Ended(Ending.DONE, retrieved=True))
            if problem is not None:
                log.warning(
                    "export %s failed, and its pod did not end: %s",
                    export.id,
                    problem.removeprefix("not its pod: "),
                )
            raise
        problem = await machine.end(Ended(Ending.DONE, retrieved=True))
        if problem is not None:
            log.warning("export %s ended, but %s", export.id, problem)
    return lines
