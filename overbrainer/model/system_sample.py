"""A sample of a machine: disks, CPU, memory, GPUs (the values system events carry)."""

from __future__ import annotations

import attrs


@attrs.frozen
class Disk:
    """One mounted file system; `shared` marks network file systems."""

    mount: str
    fstype: str | None
    shared: bool
    size_bytes: int
    used_bytes: int
    available_bytes: int

    def used_ratio(self) -> float | None:
        """Used share the way `df` counts it (root's reserve counts as used)."""
        denominator = self.used_bytes + self.available_bytes
        return self.used_bytes / denominator if denominator else None


@attrs.frozen
class CpuTimes:
    """Counters kept from one sample to compute the next one's usage."""

    busy: float
    total: float
    cgroup: bool
    cpus: float | None


@attrs.frozen
class Cpu:
    """CPU figures: busy share since the previous sample, host load, CPUs available."""

    usage: float | None
    load1: float | None
    cpus: float | None
    container: bool
    times: CpuTimes | None = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class Memory:
    """Memory used against the machine's or container's limit."""

    used_bytes: int
    limit_bytes: int

    def ratio(self) -> float | None:
        """Used share of the limit."""
        return self.used_bytes / self.limit_bytes if self.limit_bytes else None


@attrs.frozen
class Gpu:
    """One GPU's figures; unknown ones are None."""

    index: int
    name: str
    utilization: float | None = None
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    temperature_celsius: float | None = None
    power_watts: float | None = None
    power_limit_watts: float | None = None

    def memory_ratio(self) -> float | None:
        """Used share of GPU memory when both figures are known."""
        if self.memory_used_bytes is None or not self.memory_total_bytes:
            return None
        return self.memory_used_bytes / self.memory_total_bytes


@attrs.frozen
class SystemSample:
    """A machine at one moment; `at` is Unix seconds on the local clock."""

    at: float
    disks: tuple[Disk, ...] = ()
    cpu: Cpu | None = None
    memory: Memory | None = None
    gpus: tuple[Gpu, ...] = ()

    def run_disk(self) -> Disk | None:
        """The file system of the run directory, first of the disks."""
        return self.disks[0] if self.disks else None
