"""What a training run or an export asks of a machine made for it (a pod): its VRAM floor
(and, for a run, the account's stray pods warned about first: §7.5 steps 1-2)."""

from __future__ import annotations

import logging

import trio

from overbrainer.export.job import ExportCancelled
from overbrainer.export.plan import ExportPlan, ExportRequest, base_model_of
from overbrainer.export.record import CHILD
from overbrainer.flows.pods import stray_pod_warnings
from overbrainer.model.errors import OverbrainerError
from overbrainer.targets import (
    JobNeeds,
    export_sizing,
    kind_of,
    open_runpod,
    runpod_key,
    vram_floor,
)
from overbrainer.training import CONFIG_FILE, Session, StartPlan, TrainTarget, not_started

log = logging.getLogger(__name__)

NO_BASE = f"the run's {CONFIG_FILE} names no base_model"


def _made_for_the_job(target: TrainTarget) -> bool:
    """Whether the target's kind makes a machine for each job (sized before it is made)."""
    return kind_of(target).makes_pod


async def train_needs(session: Session, plan: StartPlan, keep: bool) -> JobNeeds:
    """A run's needs; on a kind that makes its machine, after the strays are warned about and
    with the floor its model needs (Ctrl-C: no run)."""
    needs = JobNeeds(snapshots=True, keep=keep)
    if not _made_for_the_job(plan.target):
        return needs
    await _warn_strays(session)
    floor = await session.interrupt.race(lambda: vram_floor(session.settings, plan.target))
    if session.interrupt.caught:
        raise not_started()
    return JobNeeds(vram_floor_gb=floor, keep=keep, snapshots=True)


async def _warn_strays(session: Session) -> None:
    """Warn of the account's pods nothing of this project will delete."""
    key = await runpod_key(session.settings, session.interrupt.race)
    if key is None:
        raise not_started()
    root = session.runs.root
    async with open_runpod(session.settings.runpod.url, key) as api:
        try:
            warnings = await session.interrupt.race(lambda: stray_pod_warnings(api, root))
        except OverbrainerError as error:
            log.warning("cannot list the account's pods to look for strays: %s", error.message)
            return
    if warnings is None:
        raise not_started()
    for warning in warnings:
        log.warning("%s", warning)


async def export_floor(session: Session, request: ExportRequest, plan: ExportPlan) -> int | None:
    """The VRAM floor of a machine made for the export, from the run's base model (its disk
    warned about); None elsewhere or without an estimate (Ctrl-C: no export)."""
    target, run, interrupt = plan.target, plan.run, session.interrupt
    if not _made_for_the_job(target):
        return None
    run_dir = session.runs.dir_of(run.id)
    base = await trio.to_thread.run_sync(base_model_of, run_dir)
    merge = (
        plan.choice.which == CHILD
        and await trio.Path(run_dir / plan.choice.model / "adapter_config.json").is_file()
    )
    sizing = await interrupt.race(
        lambda: export_sizing(session.settings, target, base, merge, request.quantize, NO_BASE)
    )
    if interrupt.caught:
        raise ExportCancelled(f"interrupted before the export of run {run.id} started")
    return sizing
