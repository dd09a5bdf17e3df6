"""A system sample as text rows: disk, root, cpu, mem, then one row per GPU."""

from __future__ import annotations

from overbrainer.model.system_sample import SystemSample

_UNITS = "BKMGTP"


def _unit_of(total: float) -> tuple[str, float]:
    step = 0
    while total >= 1024 and step < len(_UNITS) - 1:
        total /= 1024
        step += 1
    return _UNITS[step], 1024.0**step


def pair(used: float, total: float) -> str:
    """`used/total` in the unit of the total, binary steps; one decimal below 9.95."""
    unit, scale = _unit_of(total)

    def number(value: float) -> str:
        scaled = value / scale
        return f"{scaled:.1f}" if scaled < 9.95 else f"{scaled:.0f}"

    return f"{number(used)}/{number(total)}{unit}"


def percent(ratio: float | None) -> str:
    """` NN%`, or `  --%` when unknown."""
    return "  --%" if ratio is None else f" {round(ratio * 100):>3}%"


def system_rows(sample: SystemSample) -> list[str]:
    """One line per row: a 5-column name, the percentage, then the figures behind it."""
    rows: list[str] = []
    for index, disk in enumerate(sample.disks):
        name = "disk" if index == 0 else "root"
        figures = pair(disk.used_bytes, disk.used_bytes + disk.available_bytes)
        shared = ", shared" if disk.shared else ""
        rows.append(
            f"{name:<5}{percent(disk.used_ratio())}  {figures}  {disk.mount} "
            f"({disk.fstype or '?'}{shared})"
        )
    if sample.cpu is not None:
        cpu = sample.cpu
        load = "?" if cpu.load1 is None else f"{cpu.load1:.2f}"
        cpus = "?" if cpu.cpus is None else f"{cpu.cpus:g}"
        container = ", container" if cpu.container else ""
        rows.append(f"{'cpu':<5}{percent(cpu.usage)}  load {load}/{cpus}{container}")
    if sample.memory is not None:
        memory = sample.memory
        rows.append(
            f"{'mem':<5}{percent(memory.ratio())}  {pair(memory.used_bytes, memory.limit_bytes)}"
        )
    for gpu in sample.gpus:
        parts = []
        if gpu.memory_used_bytes is not None and gpu.memory_total_bytes:
            parts.append(pair(gpu.memory_used_bytes, gpu.memory_total_bytes))
        if gpu.temperature_celsius is not None:
            parts.append(f"{gpu.temperature_celsius:.0f}C")
        if gpu.power_watts is not None:
            parts.append(f"{gpu.power_watts:.0f}W")
        rows.append(
            f"{f'gpu{gpu.index}':<5}{percent(gpu.utilization)}  {' '.join(parts)}  {gpu.name}"
        )
    if not sample.gpus:
        rows.append(f"{'gpu':<5}  --%  none found (no NVML library or no NVIDIA GPU)")
    return rows
