"""`gpu_types = "auto"` and `data_center_ids = "auto"`: pick from the catalog (reference §7.5)."""

from __future__ import annotations

import attrs

from overbrainer.model.errors import WorkFailed
from overbrainer.targets.runpod.types import GpuType

MAX_OUT_OF_STOCK = 3
"""Cheaper out-of-stock types tried before the in-stock ones, over the whole walk."""


class AutoError(WorkFailed):
    """Nothing in the catalog fits: no pod is asked for."""


@attrs.frozen
class Limits:
    """What a GPU type must meet; `vram_floor_gb` is `min_vram_gb` or the estimate's floor."""

    gpu_count: int = 1
    min_vram_gb: int | None = None
    max_price_per_hour: float | None = None
    data_center_ids: tuple[str, ...] = ()
    vram_floor_gb: int | None = None
    """The estimate's floor, used when `min_vram_gb` is unset."""

    @property
    def floor(self) -> int | None:
        """The VRAM floor in GB, if any."""
        return self.min_vram_gb if self.min_vram_gb is not None else self.vram_floor_gb

    def describe(self) -> str:
        """The limits as the error names them: `gpu_count = 2, min_vram_gb = 48, …`."""
        parts = [f"gpu_count = {self.gpu_count}"]
        if self.min_vram_gb is not None:
            parts.append(f"min_vram_gb = {self.min_vram_gb}")
        elif self.vram_floor_gb is not None:
            parts.append(f"estimated VRAM floor = {self.vram_floor_gb} GB")
        if self.max_price_per_hour is not None:
            parts.append(f"max_price_per_hour = {self.max_price_per_hour:g}")
        if self.data_center_ids:
            parts.append(f"data_center_ids = {', '.join(self.data_center_ids)}")
        return ", ".join(parts)


def price_order(gpu: GpuType) -> tuple[bool, float, int, str]:
    """Cheapest first (no price last), then more VRAM, then ID."""
    price = gpu.secure_price
    return (price is None, price or 0.0, -gpu.memory_gb, gpu.id)


def passes(gpu: GpuType, limits: Limits) -> bool:
    """Whether a Secure Cloud type meets every limit but stock."""
    floor = limits.floor
    price = gpu.secure_price
    return (
        gpu.secure
        and gpu.max_count_secure >= limits.gpu_count
        and (floor is None or gpu.memory_gb >= floor)
        and (
            limits.max_price_per_hour is None
            or (price is not None and price <= limits.max_price_per_hour)
        )
    )


def in_stock(gpu: GpuType, data_center_ids: tuple[str, ...]) -> bool:
    """In stock overall, or in one of `data_center_ids` when some are listed."""
    if data_center_ids:
        return any(gpu.stock_in(dc).in_stock for dc in data_center_ids)
    return gpu.availability.in_stock


def pick_gpu_types(
    catalog: list[GpuType], limits: Limits, out_of_stock_left: int = MAX_OUT_OF_STOCK
) -> list[GpuType]:
    """The types to try in order: up to `out_of_stock_left` cheaper out-of-stock ones, then
    the in-stock ones, cheapest first. Raises `AutoError` when none is in stock."""
    fitting = sorted((g for g in catalog if passes(g, limits)), key=price_order)
    stocked = [g for g in fitting if in_stock(g, limits.data_center_ids)]
    if not stocked:
        raise AutoError(
            "no GPU type in stock on Runpod's Secure Cloud for "
            f'gpu_types = "auto" ({limits.describe()})'
        )
    cheapest = price_order(stocked[0])
    cheaper = [g for g in fitting if g not in stocked and price_order(g) < cheapest]
    return cheaper[: max(out_of_stock_left, 0)] + stocked


def _either(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def pick_data_centers(chosen: list[GpuType], gpu_count: int) -> list[str]:
    """`data_center_ids = "auto"`: every DC where a chosen type is in stock, ordered by the
    cheapest such type there, then ID. Raises `AutoError` when there is none."""
    best: dict[str, tuple[bool, float, int, str]] = {}
    for gpu in chosen:
        for place in gpu.data_centers:
            if place.availability.in_stock:
                order = price_order(gpu)
                best[place.id] = min(best.get(place.id, order), order)
    if not best:
        names = _either([gpu.id for gpu in chosen])
        raise AutoError(
            f"no data center has {names} in stock for "
            f'data_center_ids = "auto" (gpu_count = {gpu_count})'
        )
    return sorted(best, key=lambda dc: (best[dc], dc))


def picked_line(chosen: list[GpuType]) -> str:
    """The log line naming the picks: `gpu_types = "auto" picked A ($0.40/h, 48 GB), …`."""
    parts = []
    for gpu in chosen:
        price = f"${gpu.secure_price:.2f}/h" if gpu.secure_price is not None else "no price"
        stock = "" if gpu.availability.in_stock else ", out of stock"
        parts.append(f"{gpu.id} ({price}, {gpu.memory_gb} GB{stock})")
    return f'gpu_types = "auto" picked {", ".join(parts)}'


@attrs.frozen
class PodPrice:
    """What a new pod costs before it starts: `gpu` and its price per hour (the cheapest
    in-stock type that fits), or only the cap (`gpu` None), or neither (unknown)."""

    per_hour: float | None = None
    gpu: str | None = None

    def words(self) -> str:
        """The CLI's words: `at about $0.40/h (A40, …)`, `at most …`, or the unknown price."""
        if self.per_hour is not None and self.gpu is not None:
            return f"at about ${self.per_hour:.2f}/h ({self.gpu}, the cheapest GPU type in stock)"
        if self.per_hour is not None:
            return (
                f"at most ${self.per_hour:.2f}/h "
                "(max_price_per_hour: the catalog shows no price in stock)"
            )
        return (
            "at a price the catalog does not show "
            "(no GPU type in stock with a price, and no max_price_per_hour)"
        )


def pod_price(
    catalog: list[GpuType] | None,
    limits: Limits,
    listed: tuple[str, ...] | None,
) -> PodPrice:
    """How much a new pod costs, before it starts (§A.7): the cheapest in-stock type that
    fits (among `listed` unless None, for `auto`), else `max_price_per_hour`, else unknown."""
    fitting = [
        gpu
        for gpu in catalog or []
        if (listed is None or gpu.id in listed)
        and passes(gpu, limits)
        and gpu.secure_price is not None
        and in_stock(gpu, limits.data_center_ids)
    ]
    if fitting:
        cheapest = min(fitting, key=price_order)
        return PodPrice((cheapest.secure_price or 0.0) * limits.gpu_count, cheapest.id)
    if limits.max_price_per_hour is not None:
        return PodPrice(limits.max_price_per_hour * limits.gpu_count)
    return PodPrice()


def price_words(
    catalog: list[GpuType] | None,
    limits: Limits,
    listed: tuple[str, ...] | None,
) -> str:
    """The CLI's price words of a new pod (§A.7), from `pod_price`."""
    return pod_price(catalog, limits, listed).words()
