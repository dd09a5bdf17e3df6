"""A machine's gauges from its samples, and their recent history (the system panel's data)."""

from __future__ import annotations

import attrs

from overbrainer.model.system_sample import SystemSample
from overbrainer.system.rows import pair

HISTORY = 60
"""Samples each gauge keeps for its sparkline (10 minutes at one sample every 10 s)."""


@attrs.frozen
class Gauge:
    """One figure of a machine as a share of its capacity; `ratio` None when unknown."""

    key: str
    """What its history is kept under (`cpu`, `gpu0 mem`, `disk /data`)."""
    label: str
    ratio: float | None
    figures: str


def gauges(sample: SystemSample) -> list[Gauge]:
    """The sample's gauges: CPU, memory, each GPU (use, then memory), then the disks."""
    found: list[Gauge] = []
    cpu = sample.cpu
    if cpu is not None:
        words = [] if cpu.cpus is None else [f"{cpu.cpus:g} CPUs"]
        if cpu.load1 is not None:
            words.append(f"load {cpu.load1:.2f}")
        if cpu.usage is None:
            words.append("use: next sample")  # a busy share needs two samples
        found.append(Gauge("cpu", "cpu", cpu.usage, ", ".join(words)))
    memory = sample.memory
    if memory is not None:
        figures = pair(memory.used_bytes, memory.limit_bytes)
        found.append(Gauge("mem", "mem", memory.ratio(), figures))
    for gpu in sample.gpus:
        words = []
        if gpu.temperature_celsius is not None:
            words.append(f"{gpu.temperature_celsius:.0f}°C")
        if gpu.power_watts is not None:
            limit = "" if gpu.power_limit_watts is None else f"/{gpu.power_limit_watts:.0f}"
            words.append(f"{gpu.power_watts:.0f}{limit}W")
        words.append(gpu.name)
        found.append(Gauge(f"gpu{gpu.index}", f"gpu{gpu.index}", gpu.utilization, " ".join(words)))
        known = gpu.memory_used_bytes is not None and gpu.memory_total_bytes
        vram = pair(gpu.memory_used_bytes or 0, gpu.memory_total_bytes or 0) if known else ""
        found.append(Gauge(f"gpu{gpu.index} mem", " vram", gpu.memory_ratio(), vram))
    for index, disk in enumerate(sample.disks):
        total = disk.used_bytes + disk.available_bytes
        kind = f"{disk.fstype or '?'}{', shared' if disk.shared else ''}"
        figures = f"{pair(disk.used_bytes, total)} {disk.mount} ({kind})"
        label = "disk" if index == 0 else "root"
        found.append(Gauge(f"disk {disk.mount}", label, disk.used_ratio(), figures))
    return found


@attrs.frozen
class Machine:
    """A machine's latest sample and each of its gauges' recent shares, oldest first."""

    sample: SystemSample | None = None
    history: tuple[tuple[str, tuple[float, ...]], ...] = ()

    def add(self, sample: SystemSample) -> Machine:
        """With `sample` the latest; gauges it no longer has lose their history."""
        kept = dict(self.history)
        history = []
        for gauge in gauges(sample):
            values = kept.get(gauge.key, ())
            if gauge.ratio is not None:
                values = (*values, gauge.ratio)[-HISTORY:]
            history.append((gauge.key, values))
        return Machine(sample, tuple(history))

    def recent(self, key: str) -> tuple[float, ...]:
        """The shares gauge `key` had, oldest first."""
        return dict(self.history).get(key, ())
