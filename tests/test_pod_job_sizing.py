"""Pinned literals of a compare's or an export's pod (§A.7, §B.2): the GGUF's VRAM floor, the
price line before the pod starts, the export's container-disk warning."""

from __future__ import annotations

import pytest

from overbrainer.config.settings import ListOrAuto
from overbrainer.targets import RunpodTarget, disk_warning, gguf_vram_floor
from overbrainer.targets.runpod.auto import Limits, price_words
from overbrainer.targets.runpod.types import parse_gpu_type
from tests.runpod_fake import gpu

A40 = parse_gpu_type(gpu("NVIDIA A40", 48, 0.44))
A4000 = parse_gpu_type(gpu("NVIDIA RTX A4000", 16, 0.17))
H100_OUT = parse_gpu_type(gpu("NVIDIA H100", 80, 2.69, availability="NONE", data_centers=()))
AUTO = ListOrAuto(auto=True)
UNPRICED = parse_gpu_type(gpu("NVIDIA L4", 24, 0.0, secure=False))


@pytest.mark.parametrize(
    ("size", "floor"),
    [(1, 3), (833_333_333, 3), (833_333_334, 4), (4_683_071_488, 8), (16_000_000_000, 22)],
)
def test_the_gguf_vram_floor(size: int, floor: int) -> None:
    # ceil(ceil(bytes · 6/5) / 1e9) + 2 GB
    assert gguf_vram_floor(size) == floor


def test_the_cheapest_fitting_type_in_stock_is_the_price() -> None:
    catalog = [A40, A4000, H100_OUT]
    assert price_words(catalog, Limits(), None) == (
        "at about $0.17/h (NVIDIA RTX A4000, the cheapest GPU type in stock)"
    )
    assert price_words(catalog, Limits(vram_floor_gb=20), None) == (
        "at about $0.44/h (NVIDIA A40, the cheapest GPU type in stock)"
    )
    # A listed gpu_types: only those; two GPUs a pod: twice the price.
    assert price_words(catalog, Limits(gpu_count=2), ("NVIDIA A40",)) == (
        "at about $0.88/h (NVIDIA A40, the cheapest GPU type in stock)"
    )


def test_without_a_price_in_stock_the_cap_then_nothing() -> None:
    limits = Limits(max_price_per_hour=3.0)
    assert price_words([H100_OUT], limits, None) == (
        "at most $3.00/h (max_price_per_hour: the catalog shows no price in stock)"
    )
    unknown = (
        "at a price the catalog does not show "
        "(no GPU type in stock with a price, and no max_price_per_hour)"
    )
    assert price_words([H100_OUT, UNPRICED], Limits(), None) == unknown
    assert price_words(None, Limits(), None) == unknown


def test_the_export_disk_warning() -> None:
    target = RunpodTarget(AUTO, 2, container_disk_gb=50)
    # 7e9 parameters, an adapter, Q4_K_M: (28 + 14 + 4.29) GB × 1.1 = 50.93 GB.
    assert disk_warning(7_000_000_000, True, "Q4_K_M", target) == (
        "the export writes about 51.0 GB on the pod (estimate), more than its "
        "container_disk_gb = 50: it may run out of disk; raise container_disk_gb or set "
        "network_volume_id"
    )
    assert disk_warning(7_000_000_000, False, "Q4_K_M", target) is None
    with_volume = RunpodTarget(AUTO, 2, container_disk_gb=50, network_volume_id="vol1")
    assert disk_warning(7_000_000_000, True, "Q4_K_M", with_volume) is None
