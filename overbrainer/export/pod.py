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

from overbrainer.config.settings import Settings
from overbrainer.export.job import ExportCancelled, follow_and_deliver
from overbrainer.export.plan import ExportPlan, ExportRequest
from overbrainer.export.start import ExportStart, Started, create_export, start_export
from overbrainer.model.errors import OverbrainerError
from overbrainer.model.job_status import JobStatus
from overbrainer.model.pod_status import DeleteReason
from overbrainer.targets import (
    GB,
    JOB_ENV,
    RunpodTarget,
    ShapeUnknown,
    about,
    clean_up,
    end_pod_bounded,
    export_disk_bytes,
    export_need_bytes,
    floor_gb,
    hub_shape,
    new_pod_run,
    no_estimate_line,
    open_pod_ssh,
    open_runpod,
    pod_path,
    pod_settings,
    workdir,
)
from overbrainer.training import (
    CONFIG_FILE,
    RunRecord,
    Session,
    api_key,
    follow_on_pod,
    provision_or_fail,
    start_on_pod,
)

log = logging.getLogger(__name__)


def base_model_of(run_dir: Path) -> str | None:
    """`base_model` of the run's axolotl.yaml, if it names one (blocking)."""
    try:
        raw: Any = yaml.safe_load((run_dir / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return None
    base = raw.get("base_model") if isinstance(raw, dict) else None
    return base if isinstance(base, str) else None


def disk_warning(params: int, merge: bool, quantize: str, target: RunpodTarget) -> str | None:
    """The warning when the export may not fit the pod's container disk (no network volume)."""
    if target.network_volume_id is not None:
        return None
    need = export_disk_bytes(params, merge, quantize)
    if need <= target.container_disk_gb * GB:
        return None
    return (
        f"the export writes {about(need)} on the pod (estimate), more than its "
        f"container_disk_gb = {target.container_disk_gb}: it may run out of disk; raise "
        "container_disk_gb or set network_volume_id"
    )


async def export_sizing(
    settings: Settings, target: RunpodTarget, base_model: str | None, merge: bool, quantize: str
) -> int | None:
    """From the base model's shape: the VRAM floor for `gpu_types = "auto"` without
    `min_vram_gb` (logged), and the container-disk warning. None without a floor; no shape
    is warned about only where a floor was wanted."""
    wants_floor = target.gpu_types.auto and target.min_vram_gb is None

    def unknown(cause: str) -> None:
        if wants_floor:
            log.warning("%s", no_estimate_line(cause))
        else:
            log.debug("export: no disk estimate: %s", cause)

    if base_model is None:
        unknown(f"the run's {CONFIG_FILE} names no base_model")
        return None
    try:
        shape = await hub_shape(settings, base_model)
    except ShapeUnknown as error:
        unknown(str(error))
        return None
    warning = disk_warning(shape.params, merge, quantize, target)
    if warning is not None:
        log.warning("export: %s", warning)
    if not wants_floor:
        return None
    need = export_need_bytes(shape.params)
    log.info(
        'export: the export needs %s of VRAM (estimate): gpu_types = "auto" keeps GPU types '
        "with at least %d GB",
        about(need),
        floor_gb(need),
    )
    return floor_gb(need)


async def export_on_pod(session: Session, request: ExportRequest, plan: ExportPlan) -> list[str]:
    """The export job on a new pod of the run's Runpod target; the delivery lines (§B.5)."""
    target = pod_settings(plan.target)
    run, exports, interrupt = plan.run, plan.exports, session.interrupt
    run_dir = session.runs.dir_of(run.id)
    base = await trio.to_thread.run_sync(base_model_of, run_dir)
    merge = await trio.Path(run_dir / plan.choice.model / "adapter_config.json").is_file()
    sizing = await interrupt.race(
        lambda: export_sizing(session.settings, target, base, merge, request.quantize)
    )
    if interrupt.caught:
        raise ExportCancelled(f"interrupted before the export of run {run.id} started")
    key = await api_key(session)
    async with open_runpod(session.settings.runpod.url, key) as api:
        export = await create_export(plan, request, workdir(target))
        pod = new_pod_run(
            api,
            session.bus,
            exports,
            export,
            target,
            keep=request.keep_pod,
            stopped=lambda: interrupt.caught,
            vram_floor_gb=sizing,
            noun="export",
        )
        await provision_or_fail(pod, interrupt)
        async with open_pod_ssh(pod, run.target) as executor:
            started: Started | None = None

            async def start() -> RunRecord:
                nonlocal started
                started = await start_export(
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
                )
                return started.record

            await start_on_pod(pod, executor, start)
            assert started is not None

            async def watch(follow_job: Callable[[], Awaitable[JobStatus]]) -> JobStatus | None:
                assert started is not None
                return await follow_on_pod(interrupt, pod, executor, started.record, follow_job)

            try:
                lines = await follow_and_deliver(session, executor, started, request, plan, watch)
            except ExportCancelled:
                if not pod.keep:
                    await clean_up(pod, DeleteReason.CANCELLED)
                raise
            except (OverbrainerError, OSError):
                problem = await end_pod_bounded(pod, executor, retrieved=True)
                if problem is not None:
                    log.warning("export %s failed, and its pod did not end: %s", export.id, problem)
                raise
            problem = await end_pod_bounded(pod, executor, retrieved=True)
            if problem is not None:
                log.warning("export %s ended, but not its pod: %s", export.id, problem)
    return lines
