"""VRAM sizing and `gpu_types = "auto"`, pinned to the reference's examples (§7.5, §8)."""

from __future__ import annotations

import pytest

from overbrainer.config.settings import Adapter, Training
from overbrainer.targets.runpod.auto import (
    AutoError,
    Limits,
    pick_data_centers,
    pick_gpu_types,
    picked_line,
)
from overbrainer.targets.runpod.model_shape import is_repo_id
from overbrainer.targets.runpod.types import GpuType, parse_gpu_type
from overbrainer.targets.runpod.vram import (
    Fit,
    ModelShape,
    about,
    estimate_line,
    fit,
    floor_gb,
    need_bytes,
    no_estimate_line,
    recipe_of,
)
from tests.runpod_fake import gpu

# Shapes as the Hub gives them (safetensors.total; hidden size, layers, vocabulary).
QWEN3_4B = ModelShape(params=4_022_468_096, hidden=2560, layers=36, vocab=151_936)
QWEN3_8B = ModelShape(params=8_190_735_360, hidden=4096, layers=36, vocab=151_936)
MISTRAL_7B = ModelShape(params=7_241_732_096, hidden=4096, layers=32, vocab=32_000)


def training(adapter: Adapter, **extra: object) -> Training:
    return Training(target="gpu", base_model="m", adapter=adapter, axolotl_extra=dict(extra))


@pytest.mark.parametrize(
    ("shape", "adapter", "floor"),
    [(QWEN3_4B, Adapter.LORA, 21), (QWEN3_8B, Adapter.QLORA, 18), (MISTRAL_7B, Adapter.FULL, 163)],
)
def test_reference_examples(shape: ModelShape, adapter: Adapter, floor: int) -> None:
    recipe = recipe_of(training(adapter))
    assert recipe is not None
    assert floor_gb(need_bytes(shape, recipe)) == floor


def test_qwen3_4b_lora_line() -> None:
    recipe = recipe_of(training(Adapter.LORA))
    assert recipe is not None
    need = need_bytes(QWEN3_4B, recipe)
    assert about(need) == "about 20.4 GB"
    assert estimate_line(need) == (
        "the run needs about 20.4 GB of VRAM per GPU (estimate): "
        'gpu_types = "auto" keeps GPU types with at least 21 GB'
    )


def test_recipe_reads_axolotl_extra_first() -> None:
    base = recipe_of(training(Adapter.LORA))
    no_ckpt = recipe_of(training(Adapter.LORA, gradient_checkpointing=False))
    eight = recipe_of(training(Adapter.FULL, optimizer="adamw_bnb_8bit"))
    assert base is not None and no_ckpt is not None and eight is not None
    assert need_bytes(QWEN3_4B, no_ckpt) > need_bytes(QWEN3_4B, base)
    full = recipe_of(training(Adapter.FULL))
    assert full is not None
    assert need_bytes(MISTRAL_7B, eight) < need_bytes(MISTRAL_7B, full)
    assert recipe_of(training(Adapter.FULL, deepspeed="zero3.json")) is None
    assert recipe_of(training(Adapter.FULL, fsdp=None)) is not None


def test_fit_bands() -> None:
    need = 20 * 10**9
    assert fit(19, need) is Fit.SMALL
    assert fit(21, need) is Fit.TIGHT
    assert fit(22, need) is Fit.OK
    assert fit(24, None) is Fit.UNKNOWN


def test_no_estimate_warning() -> None:
    assert no_estimate_line("./local is not a Hugging Face repo ID") == (
        "cannot estimate the VRAM the run needs (./local is not a Hugging Face repo ID): "
        'gpu_types = "auto" picks without a VRAM floor'
    )


def test_repo_ids() -> None:
    assert is_repo_id("Qwen/Qwen3-4B") and is_repo_id("gpt2")
    assert not is_repo_id("/models/qwen") and not is_repo_id("a/b/c")
    assert not is_repo_id(".hidden/x") and not is_repo_id("Qwen/Qwen 3")


def catalog() -> list[GpuType]:
    return [
        parse_gpu_type(g)
        for g in (
            gpu("A", 48, 0.40, data_centers=(("EU-RO-1", "LOW"),)),
            gpu("B", 80, 1.20, data_centers=(("US-KS-2", "HIGH"), ("EU-RO-1", "MEDIUM"))),
            gpu("C", 24, 0.20, availability="NONE", data_centers=()),
            gpu("D", 48, 0.30, availability="NONE", data_centers=()),
            gpu("E", 96, 1.20, data_centers=(("US-KS-2", "LOW"),)),
            gpu("F", 141, 3.00, max_count=1, data_centers=(("US-KS-2", "HIGH"),)),
            gpu("G", 24, 0.10, secure=False, data_centers=()),
        )
    ]


def test_auto_sorts_by_price_then_vram_and_puts_cheaper_out_of_stock_first() -> None:
    picked = pick_gpu_types(catalog(), Limits(gpu_count=2))
    assert [g.id for g in picked] == ["C", "D", "A", "E", "B"]
    assert [g.id for g in pick_gpu_types(catalog(), Limits(gpu_count=2), 1)] == [
        "C",
        "A",
        "E",
        "B",
    ]


def test_auto_limits_vram_price_and_data_center() -> None:
    limits = Limits(gpu_count=1, min_vram_gb=48, max_price_per_hour=1.5)
    assert [g.id for g in pick_gpu_types(catalog(), limits, 0)] == ["A", "E", "B"]
    floor = Limits(vram_floor_gb=81)
    assert [g.id for g in pick_gpu_types(catalog(), floor)] == ["E", "F"]
    in_us = Limits(data_center_ids=("US-KS-2",))
    assert [g.id for g in pick_gpu_types(catalog(), in_us, 0)] == ["E", "B", "F"]


def test_auto_nothing_in_stock_is_the_reference_message() -> None:
    limits = Limits(gpu_count=2, min_vram_gb=48, max_price_per_hour=1.5)
    with pytest.raises(AutoError) as caught:
        pick_gpu_types([g for g in catalog() if g.id in ("D", "F")], limits)
    assert caught.value.message == (
        'no GPU type in stock on Runpod\'s Secure Cloud for gpu_types = "auto" '
        "(gpu_count = 2, min_vram_gb = 48, max_price_per_hour = 1.5)"
    )


def test_auto_data_centers() -> None:
    by_id = {g.id: g for g in catalog()}
    assert pick_data_centers([by_id["A"], by_id["B"]], 1) == ["EU-RO-1", "US-KS-2"]
    assert pick_data_centers([by_id["E"], by_id["B"]], 1) == ["US-KS-2", "EU-RO-1"]
    with pytest.raises(AutoError) as caught:
        pick_data_centers([by_id["C"], by_id["D"]], 1)
    assert caught.value.message == (
        'no data center has C or D in stock for data_center_ids = "auto" (gpu_count = 1)'
    )


def test_picked_line() -> None:
    by_id = {g.id: g for g in catalog()}
    assert picked_line([by_id["D"], by_id["A"]]) == (
        'gpu_types = "auto" picked D ($0.30/h, 48 GB, out of stock), A ($0.40/h, 48 GB)'
    )
