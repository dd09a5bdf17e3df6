"""How the pod of a run's compare (§A.7) or export (§B.2) is sized and priced: the VRAM floor
from the GGUF's or the base model's size, the container-disk warning, the price line."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import trio

from overbrainer.config.secrets import resolve_secret
from overbrainer.config.settings import Settings
from overbrainer.config.target_settings import TargetSettings
from overbrainer.targets.runpod.api import RunpodApi, open_runpod
from overbrainer.targets.runpod.auto import Limits, PodPrice, pod_price
from overbrainer.targets.runpod.errors import RunpodError
from overbrainer.targets.runpod.model_shape import ShapeUnknown
from overbrainer.targets.runpod.settings import RunpodTarget
from overbrainer.targets.runpod.vram import (
    GB,
    about,
    export_disk_bytes,
    export_need_bytes,
    floor_gb,
    no_estimate_line,
)
from overbrainer.targets.runpod.vram_floor import hub_shape

log = logging.getLogger(__name__)

VRAM_MARGIN_GB = 2
"""GB above the GGUF's size (plus a fifth) for the context and llama.cpp's buffers."""


def _runpod(target: TargetSettings) -> RunpodTarget:
    assert isinstance(target, RunpodTarget), "a pod is sized for a runpod target"
    return target


def gguf_vram_floor(size: int) -> int:
    """The VRAM floor of a GGUF of `size` bytes: ceil(ceil(size·6/5)/1e9) + 2 GB (§A.7)."""
    return math.ceil(math.ceil(size * 6 / 5) / 1e9) + VRAM_MARGIN_GB


def _wants_floor(target: RunpodTarget) -> bool:
    """Only `gpu_types = "auto"` without `min_vram_gb` picks GPU types by an estimate."""
    return target.gpu_types.auto and target.min_vram_gb is None


def gguf_floor(target: TargetSettings, size: int) -> int | None:
    """The VRAM floor of the pod for a GGUF of `size` bytes, where the target wants one."""
    return gguf_vram_floor(size) if _wants_floor(_runpod(target)) else None


def _limits(target: RunpodTarget, floor: int | None) -> Limits:
    """What a GPU type of the target must meet."""
    auto = target.data_center_ids.auto
    return Limits(
        gpu_count=target.gpu_count,
        min_vram_gb=target.min_vram_gb,
        max_price_per_hour=target.max_price_per_hour,
        data_center_ids=() if auto else target.data_center_ids.items,
        vram_floor_gb=floor,
    )


async def price_pod(api: RunpodApi, target: TargetSettings, floor: int | None) -> PodPrice:
    """The price of a new pod of the target (the catalog unread: no price)."""
    pod = _runpod(target)
    try:
        catalog = await api.gpu_types(pod.gpu_count)
    except RunpodError as error:
        log.debug("pod: cannot read the GPU catalog for the price line: %s", error.message)
        catalog = None
    listed = None if pod.gpu_types.auto else pod.gpu_types.items
    return pod_price(catalog, _limits(pod, floor), listed)


def pod_words(price: PodPrice) -> str:
    """The confirmation's pod line (§D): the cheapest type's price, the cap, or neither."""
    if price.per_hour is not None and price.gpu is not None:
        return (
            f"a new Runpod pod, at about ${price.per_hour:.2f}/h "
            f"({price.gpu}, the cheapest GPU type in stock)"
        )
    if price.per_hour is not None:
        return f"a new Runpod pod, at most ${price.per_hour:.2f}/h"
    return "a new Runpod pod, at the price picked when it starts"


async def quote_line(settings: Settings, target: TargetSettings, gguf: Path) -> str | None:
    """The confirmation's line on the new pod a compare of `gguf` makes; None without a key
    (the compare's own check refuses it)."""
    secret = settings.runpod.api_key
    if secret is None:
        return None
    key = await resolve_secret(secret, "runpod.api_key")
    return pod_words(await quote_pod(settings, target, key, gguf))


async def quote_pod(settings: Settings, target: TargetSettings, key: str, gguf: Path) -> PodPrice:
    """The price of a compare pod for `gguf` on `target`, as the TUI asks to confirm it."""
    floor = gguf_floor(target, (await trio.Path(gguf).stat()).st_size)
    async with open_runpod(settings.runpod.url, key) as api:
        return await price_pod(api, target, floor)


def disk_warning(params: int, merge: bool, quantize: str, target: TargetSettings) -> str | None:
    """The warning when the export may not fit the pod's container disk (no network volume)."""
    pod = _runpod(target)
    if pod.network_volume_id is not None:
        return None
    need = export_disk_bytes(params, merge, quantize)
    if need <= pod.container_disk_gb * GB:
        return None
    return (
        f"the export writes {about(need)} on the pod (estimate), more than its "
        f"container_disk_gb = {pod.container_disk_gb}: it may run out of disk; raise "
        "container_disk_gb or set network_volume_id"
    )


async def export_sizing(
    settings: Settings,
    target: TargetSettings,
    base_model: str | None,
    merge: bool,
    quantize: str,
    no_base: str,
) -> int | None:
    """From the base model's shape: the VRAM floor for `gpu_types = "auto"` without
    `min_vram_gb` (logged), and the container-disk warning. None without a floor; no shape
    is warned about (`no_base` when there is no base model) only where a floor was wanted."""
    wants_floor = _wants_floor(_runpod(target))

    def unknown(cause: str) -> None:
        if wants_floor:
            log.warning("%s", no_estimate_line(cause))
        else:
            log.debug("export: no disk estimate: %s", cause)

    if base_model is None:
        unknown(no_base)
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
