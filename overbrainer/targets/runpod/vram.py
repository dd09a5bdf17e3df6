"""How much VRAM a run needs per GPU, from the model's shape and the recipe (reference §8)."""

from __future__ import annotations

import enum
import math

import attrs

from overbrainer.config.settings import Adapter, Training

GB = 10**9
OVERHEAD = 2 * GB
SATURATE = 2**64 - 1
SHARDING_KEYS = ("deepspeed", "fsdp", "fsdp_config")


@attrs.frozen
class ModelShape:
    """What sizing needs of a model: parameters, hidden size, layers, vocabulary."""

    params: int
    hidden: int
    layers: int
    vocab: int


@attrs.frozen
class Recipe:
    """The training settings that drive memory."""

    adapter: Adapter
    lora_r: int
    sequence_len: int
    micro_batch_size: int
    optimizer: str
    gradient_checkpointing: bool = True


class Fit(enum.Enum):
    """How a GPU's memory compares with the estimate."""

    SMALL = "small"
    TIGHT = "tight"
    OK = "ok"
    UNKNOWN = "?"


def _extra_int(extra: dict[str, object], key: str, default: int) -> int:
    value = extra.get(key)
    return (
        value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default
    )


def recipe_of(training: Training) -> Recipe | None:
    """The recipe of `[training]`, `axolotl_extra` first; None when the run is sharded."""
    extra = training.axolotl_extra
    if any(extra.get(key) is not None for key in SHARDING_KEYS):
        return None
    optimizer = extra.get("optimizer")
    checkpointing = extra.get("gradient_checkpointing")
    return Recipe(
        adapter=training.adapter,
        lora_r=training.lora_r,
        sequence_len=_extra_int(extra, "sequence_len", training.sequence_len),
        micro_batch_size=_extra_int(extra, "micro_batch_size", training.micro_batch_size),
        optimizer=optimizer if isinstance(optimizer, str) else training.optimizer,
        # Anything but an explicit false keeps it on, as the generated Axolotl config does.
        gradient_checkpointing=checkpointing is not False,
    )


def need_bytes(shape: ModelShape, recipe: Recipe) -> int:
    """Bytes of VRAM per GPU: weights, optimizer state and gradients, activations, logits."""
    p, h, layers = shape.params, shape.hidden, shape.layers
    weights = p * 6 // 10 if recipe.adapter is Adapter.QLORA else 2 * p
    trained = p if recipe.adapter is Adapter.FULL else layers * recipe.lora_r * h * 18
    optimizer = trained * (10 if "8bit" in recipe.optimizer else 16)
    tokens = recipe.micro_batch_size * recipe.sequence_len
    activations = tokens * h * layers * 2 * (1 if recipe.gradient_checkpointing else 34)
    logits = tokens * shape.vocab * 4
    total = weights + optimizer + activations + logits + OVERHEAD
    return min(total * 12 // 10, SATURATE)


def export_need_bytes(params: int) -> int:
    """Bytes of VRAM an export pod needs: the 16-bit weights and the overhead, × 1.2."""
    return min((2 * params + OVERHEAD) * 12 // 10, SATURATE)


def floor_gb(need: int) -> int:
    """The smallest whole number of GB that holds `need` bytes."""
    return -(-need // GB)


def about(need: int) -> str:
    """`about X.Y GB`, tenths rounded up."""
    tenths = -(-need // (GB // 10))
    return f"about {tenths // 10}.{tenths % 10} GB"


def fit(memory_gb: int, need: int | None) -> Fit:
    """`small` below the need, `tight` below 1.1 × the need, else `ok`; `?` without one."""
    if need is None:
        return Fit.UNKNOWN
    have = memory_gb * GB
    if have < need:
        return Fit.SMALL
    if have * 10 < need * 11:
        return Fit.TIGHT
    return Fit.OK


def estimate_line(need: int) -> str:
    """The info line of an estimate."""
    return (
        f"the run needs {about(need)} of VRAM per GPU (estimate): "
        f'gpu_types = "auto" keeps GPU types with at least {floor_gb(need)} GB'
    )


def no_estimate_line(cause: str) -> str:
    """The warning when there is no estimate."""
    return (
        f"cannot estimate the VRAM the run needs ({cause}): "
        'gpu_types = "auto" picks without a VRAM floor'
    )


QUANT_BITS = {
    "Q2_K": 2.6,
    "Q3_K_M": 3.9,
    "Q4_K_S": 4.6,
    "Q4_K_M": 4.9,
    "Q5_K_S": 5.5,
    "Q5_K_M": 5.7,
    "Q6_K": 6.6,
    "Q8_0": 8.5,
}


def export_disk_bytes(params: int, merge: bool, quantize: str) -> int:
    """Disk an export writes: merged weights, the 16-bit GGUF, the quantized GGUF, × 1.1."""
    merged = 4 * params if merge else 0
    f16 = 0 if quantize in ("F16", "BF16") else 2 * params
    quantized = params * QUANT_BITS.get(quantize, 16.0) / 8
    return math.ceil((merged + f16 + quantized) * 1.1)
