"""Which GPU types provisioning tries, in order, and the data centers it asks for (§7.5 step 2):
the configured list, or `gpu_types = "auto"` picked from Runpod's catalog and re-read after a type
that could not be placed."""

from __future__ import annotations

import logging

import attrs

from overbrainer.targets.runpod.auto import (
    MAX_OUT_OF_STOCK,
    AutoError,
    Limits,
    in_stock,
    pick_data_centers,
    pick_gpu_types,
    picked_line,
)
from overbrainer.targets.runpod.errors import RunpodError
from overbrainer.targets.runpod.pod_run import D, PodRun, R
from overbrainer.targets.runpod.settings import RunpodTarget
from overbrainer.targets.runpod.types import GpuType

log = logging.getLogger(__name__)


@attrs.define
class Walk:
    """The GPU types still to try and the data centers to ask for; with `auto`, what was
    tried and how many out-of-stock types were, over the whole walk."""

    types: list[str]
    data_centers: tuple[str, ...]
    auto: bool = False
    out_of_stock: set[str] = attrs.field(factory=set)
    done: set[str] = attrs.field(factory=set)
    out_of_stock_tried: int = 0
    refused: int = 0
    """Types refused with a 400 not worded as "no capacity"."""

    def tried(self, gpu_type: str) -> None:
        """Note a type as tried (never tried again in this walk)."""
        self.done.add(gpu_type)
        if gpu_type in self.out_of_stock:
            self.out_of_stock_tried += 1


def _limits(run: PodRun[D, R], data_centers: tuple[str, ...]) -> Limits:
    target = run.target
    return Limits(
        gpu_count=target.gpu_count,
        min_vram_gb=target.min_vram_gb,
        max_price_per_hour=target.max_price_per_hour,
        data_center_ids=data_centers,
        vram_floor_gb=run.vram_floor_gb,
    )


def _pick(run: PodRun[D, R], walk: Walk, catalog: list[GpuType], wanted: tuple[str, ...]) -> None:
    """Fill the walk from the catalog (types not tried yet), `auto` data centers too."""
    fresh = [gpu for gpu in catalog if gpu.id not in walk.done]
    left = MAX_OUT_OF_STOCK - walk.out_of_stock_tried
    chosen = pick_gpu_types(fresh, _limits(run, wanted), left)
    log.info("%s", picked_line(chosen))
    walk.types = [gpu.id for gpu in chosen]
    walk.out_of_stock = {gpu.id for gpu in chosen if not in_stock(gpu, wanted)}
    if run.target.data_center_ids.auto:
        walk.data_centers = tuple(pick_data_centers(chosen, run.target.gpu_count))


async def reread(run: PodRun[D, R], walk: Walk) -> None:
    """After an `auto` type that could not be placed: the catalog again, the rest re-sorted;
    a failed re-read keeps the order (warned)."""
    target = run.target
    wanted = () if target.data_center_ids.auto else target.data_center_ids.items
    try:
        catalog = await run.api.gpu_types(target.gpu_count)
    except RunpodError as error:
        log.warning(
            'cannot read Runpod\'s GPU catalog again (%s): the other gpu_types = "auto" '
            "picks are tried in their first order",
            error.message,
        )
        return
    try:
        _pick(run, walk, catalog, wanted)
    except AutoError as error:
        log.info("pod: %s", error.message)
        walk.types = []


async def choices(run: PodRun[D, R]) -> Walk:
    """The GPU types to walk and the data centers to ask for (`auto` resolved from the
    catalog)."""
    target = run.target
    wanted = () if target.data_center_ids.auto else target.data_center_ids.items
    if not target.gpu_types.auto:
        return Walk(list(target.gpu_types.items), wanted)
    catalog = await run.api.gpu_types(target.gpu_count)
    walk = Walk([], wanted, auto=True)
    _pick(run, walk, catalog, wanted)
    return walk


def walk_failure(
    problems: list[str], not_ready: list[str], target: RunpodTarget, all_refused: bool = False
) -> str:
    """Why the walk gave no ready pod: the types never placed (each with its reason), and the
    pods never ready."""
    volume = " (check network_volume_id and data_center_ids)" if target.network_volume_id else ""
    if not_ready:
        count = len(not_ready)
        text = (
            f"no gpu_types entry gave a ready pod: {count} pod{'s' if count > 1 else ''} "
            f"{'were' if count > 1 else 'was'} created but never became ready, the last one "
            f"because {not_ready[-1]}"
        )
        if problems:
            text += f"; the other types could not be placed: {'; '.join(problems)}"
        return text + volume
    detail = f": {'; '.join(problems)}" if problems else ""
    if all_refused:
        # Runpod's description: "if *every* candidate returns `400`, read the last `detail` as
        # a problem with the request rather than as absent capacity."
        detail += (
            "; every type was refused with HTTP 400, which may mean Runpod does not accept the "
            "request itself (please report it with the reasons above)"
        )
    return f"no gpu_types entry could be placed{detail}{volume}"
