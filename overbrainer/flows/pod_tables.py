"""The tables of the `pod` catalog commands (reference §7.10)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from overbrainer.model.json_values import JsonValue, money
from overbrainer.targets import DataCenter, GpuType, NetworkVolume, Template, in_stock, price_order

GIB = 1 << 30
"""Bytes in one of Runpod's GB: GPU memory and volume sizes are listed in whole GiB."""


@attrs.frozen
class Catalog:
    """What a catalog command shows: its table's lines, and its rows for `--json` under `key`."""

    lines: list[str]
    key: str
    rows: list[dict[str, JsonValue]]


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> list[str]:
    """Columns two spaces apart, `right` ones right-aligned, the last column unpadded."""
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    lines = []
    for row in [headers, *rows]:
        cells = []
        for i, cell in enumerate(row):
            last = i == len(row) - 1
            if i in right:
                cells.append(cell.rjust(widths[i]))
            else:
                cells.append(cell if last else cell.ljust(widths[i]))
        lines.append("  ".join(cells))
    return lines


def gpu_catalog(
    catalog: list[GpuType],
    *,
    min_vram: int | None = None,
    max_price: float | None = None,
    data_center: str | None = None,
    only_in_stock: bool = False,
) -> Catalog:
    """`pod gpus`: Secure Cloud types that pass the filters, cheapest first."""
    places = (data_center,) if data_center else ()
    kept = [
        gpu
        for gpu in catalog
        if gpu.secure
        and gpu.max_count_secure >= 1
        and (min_vram is None or gpu.memory_gb >= min_vram)
        and (max_price is None or (gpu.secure_price is not None and gpu.secure_price <= max_price))
        and (not only_in_stock or in_stock(gpu, places))
    ]
    ordered = sorted(kept, key=price_order)
    stock = [(gpu.stock_in(data_center) if data_center else gpu.availability) for gpu in ordered]
    found: list[dict[str, JsonValue]] = [
        {
            "id": gpu.id,
            "name": gpu.name,
            "manufacturer": gpu.manufacturer,
            "memory_gb": gpu.memory_gb,
            "memory_bytes": gpu.memory_gb * GIB,
            "cost_per_hour": money(gpu.secure_price),
            "max_count": gpu.max_count_secure,
            "stock": band.value.lower(),
        }
        for gpu, band in zip(ordered, stock, strict=True)
    ]
    if not kept:
        return Catalog(["pod: no GPU type matches"], "gpus", found)
    rows = [
        [
            gpu.id,
            str(gpu.memory_gb),
            f"{gpu.secure_price:.2f}" if gpu.secure_price is not None else "-",
            str(gpu.max_count_secure),
            band.value,
        ]
        for gpu, band in zip(ordered, stock, strict=True)
    ]
    lines = table(["ID", "VRAM GB", "$/H", "MAX COUNT", "STOCK"], rows, right={1, 2, 3})
    return Catalog(lines, "gpus", found)


def data_center_catalog(centers: list[DataCenter]) -> Catalog:
    """`pod datacenters`: by ID, with the GPU types in stock there."""
    ordered = sorted(centers, key=lambda dc: dc.id)
    found: list[dict[str, JsonValue]] = [
        {"id": dc.id, "name": dc.name, "region": dc.region, "gpus_in_stock": list(dc.gpus_in_stock)}
        for dc in ordered
    ]
    if not centers:
        return Catalog(["pod: no data center found"], "data_centers", found)
    rows = [[dc.id, dc.name, dc.region, ", ".join(dc.gpus_in_stock) or "-"] for dc in ordered]
    lines = table(["ID", "NAME", "REGION", "GPU TYPES IN STOCK"], rows, right=set())
    return Catalog(lines, "data_centers", found)


def volume_catalog(volumes: list[NetworkVolume]) -> Catalog:
    """`pod volumes`: by name."""
    ordered = sorted(volumes, key=lambda v: (v.name, v.id))
    found: list[dict[str, JsonValue]] = [
        {
            "id": v.id,
            "name": v.name,
            "size_gb": v.size_gb,
            "size_bytes": v.size_gb * GIB,
            "data_center": v.data_center,
        }
        for v in ordered
    ]
    if not volumes:
        return Catalog(["pod: no network volume on this account"], "volumes", found)
    rows = [[v.id, v.name, str(v.size_gb), v.data_center] for v in ordered]
    lines = table(["ID", "NAME", "SIZE GB", "DATA CENTER"], rows, right={2})
    return Catalog(lines, "volumes", found)


def template_catalog(templates: list[Template]) -> Catalog:
    """`pod templates`: by name."""
    ordered = sorted(templates, key=lambda t: (t.name, t.id))
    found: list[dict[str, JsonValue]] = [
        {"id": t.id, "name": t.name, "image": t.image} for t in ordered
    ]
    if not templates:
        return Catalog(["pod: no pod template on this account"], "templates", found)
    rows = [[t.id, t.name, t.image] for t in ordered]
    return Catalog(table(["ID", "NAME", "IMAGE"], rows, right=set()), "templates", found)
