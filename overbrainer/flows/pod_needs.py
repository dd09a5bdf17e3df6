"""What a training run asks of a machine made for it (a pod): its VRAM floor, and the
account's stray pods warned about first (§7.5 steps 1-2)."""

from __future__ import annotations

import logging

from overbrainer.flows.pods import stray_pod_warnings
from overbrainer.model.errors import OverbrainerError
from overbrainer.targets import JobNeeds, kind_of, open_runpod, runpod_key, vram_floor
from overbrainer.training import Session, StartPlan, not_started

log = logging.getLogger(__name__)


async def train_needs(session: Session, plan: StartPlan, keep: bool) -> JobNeeds:
    """A run's needs; on a kind that makes its machine, after the strays are warned about and
    with the floor its model needs (Ctrl-C: no run)."""
    needs = JobNeeds(snapshots=True, keep=keep)
    if not kind_of(plan.target).makes_pod:
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
