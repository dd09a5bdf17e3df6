"""The tables of the `pod` catalog commands (reference §7.10)."""

from __future__ import annotations

from collections.abc import Sequence

from overbrainer.targets import DataCenter, GpuType, NetworkVolume, Template, in_stock, price_order


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


def gpu_lines(
    catalog: list[GpuType],
    *,
    min_vram: int | None = None,
    max_price: float | None = None,
    data_center: str | None = None,
    only_in_stock: bool = False,
) -> list[str]:
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
    if not kept:
        return ["pod: no GPU type matches"]
    rows = [
        [
            gpu.id,
            str(gpu.memory_gb),
            f"{gpu.secure_price:.2f}" if gpu.secure_price is not None else "-",
            str(gpu.max_count_secure),
            (gpu.stock_in(data_center) if data_center else gpu.availability).value,
        ]
        for gpu in sorted(kept, key=price_order)
    ]
    return table(["ID", "VRAM GB", "$/H", "MAX COUNT", "STOCK"], rows, right={1, 2, 3})


def data_center_lines(centers: list[DataCenter]) -> list[str]:
    """`pod datacenters`: by ID, with the GPU types in stock there."""
    if not centers:
        return ["pod: no data center found"]
    rows = [
        [dc.id, dc.name, dc.region, ", ".join(dc.gpus_in_stock) or "-"]
        for dc in sorted(centers, key=lambda dc: dc.id)
    ]
    return table(["ID", "NAME", "REGION", "GPU TYPES IN STOCK"], rows, right=set())


def volume_lines(volumes: list[NetworkVolume]) -> list[str]:
    """`pod volumes`: by name."""
    if not volumes:
        return ["pod: no network volume on this account"]
    rows = [
        [v.id, v.name, str(v.size_gb), v.data_center]
        for v in sorted(volumes, key=lambda v: (v.name, v.id))
    ]
    return table(["ID", "NAME", "SIZE GB", "DATA CENTER"], rows, right={2})


def template_lines(templates: list[Template]) -> list[str]:
    """`pod templates`: by name."""
    if not templates:
        return ["pod: no pod template on this account"]
    rows = [[t.id, t.name, t.image] for t in sorted(templates, key=lambda t: (t.name, t.id))]
    return table(["ID", "NAME", "IMAGE"], rows, right=set())
