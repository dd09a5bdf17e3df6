"""The VRAM floor `gpu_types = "auto"` uses when `min_vram_gb` is unset (§8): an estimate."""

from __future__ import annotations

import logging

from overbrainer.config.secrets import resolve_secret
from overbrainer.config.settings import Settings
from overbrainer.config.target_settings import TargetSettings
from overbrainer.model.errors import OverbrainerError
from overbrainer.targets.runpod.model_shape import ShapeUnknown, fetch_shape
from overbrainer.targets.runpod.settings import RunpodTarget
from overbrainer.targets.runpod.vram import (
    ModelShape,
    estimate_line,
    floor_gb,
    need_bytes,
    no_estimate_line,
    recipe_of,
)

log = logging.getLogger(__name__)


async def hub_shape(settings: Settings, base_model: str) -> ModelShape:
    """The base model's shape from the Hub, with the project's token when it resolves;
    ShapeUnknown when the Hub cannot tell it."""
    token = None
    if settings.hf_token is not None:
        try:
            token = await resolve_secret(settings.hf_token, "hf_token")
        except OverbrainerError:
            token = None  # the job's start names the problem; the estimate goes without
    return await fetch_shape(base_model, settings.hub.url, token)


async def vram_floor(settings: Settings, target: TargetSettings) -> int | None:
    """The estimate's floor in GB for an `auto` target without `min_vram_gb` (logged); None,
    warned, when there is no estimate, and None for any other target."""
    assert isinstance(target, RunpodTarget), "a pod is sized for a runpod target"
    training = settings.training
    if training is None or not target.gpu_types.auto or target.min_vram_gb is not None:
        return None
    recipe = recipe_of(training)
    if recipe is None:
        log.warning("%s", no_estimate_line("the run shards the model with deepspeed or fsdp"))
        return None
    try:
        shape = await hub_shape(settings, training.base_model)
    except ShapeUnknown as error:
        log.warning("%s", no_estimate_line(str(error)))
        return None
    need = need_bytes(shape, recipe)
    log.info("%s", estimate_line(need))
    return floor_gb(need)
