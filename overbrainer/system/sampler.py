"""Samples of this machine: psutil for disks, CPU, memory; cgroup corrections; NVML for GPUs."""

from __future__ import annotations

import importlib
import logging
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import psutil
import trio

from overbrainer.model.system_sample import Disk, Gpu, SystemSample
from overbrainer.system.probe import Parts, cpu_from_parts, is_shared, memory_from_parts

log = logging.getLogger(__name__)

SAMPLE_EVERY = 10.0
"""Seconds between two system samples (a followed job, `system --watch`)."""

CGROUP_ROOT = Path("/sys/fs/cgroup")
"""Where the container's cgroup files are read from."""

# The cgroup files the probe script reads, by part name; v1 files fall back to `cpu,cpuacct`.
_V2_FILES = {
    "memory.max": "memory.max",
    "memory.current": "memory.current",
    "cpu.max": "cpu.max",
}
_V2_LINES = {
    "memory.stat": ("memory.stat", "inactive_file "),
    "cpu.stat": ("cpu.stat", "usage_usec "),
}
_V1_FILES = {
    "memory.limit_in_bytes": "memory",
    "memory.usage_in_bytes": "memory",
    "cpu.cfs_quota_us": "cpu",
    "cpu.cfs_period_us": "cpu",
    "cpuacct.usage": "cpuacct",
}


def _lines(path: Path) -> list[str]:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):
        return []
    return [line.strip() for line in text.splitlines() if line.strip()]


def cgroup_parts(root: Path = CGROUP_ROOT) -> Parts:
    """The cgroup parts of the probe's answer, read from this machine's files under `root`."""
    parts: Parts = {}
    for part, name in _V2_FILES.items():
        parts[part] = _lines(root / name)
    for part, (name, prefix) in _V2_LINES.items():
        parts[part] = [line for line in _lines(root / name) if line.startswith(prefix)][:1]
    for part, controller in _V1_FILES.items():
        parts[part] = _lines(root / controller / part) or _lines(root / "cpu,cpuacct" / part)
    v1_stat = _lines(root / "memory" / "memory.stat")
    parts["memory.stat.v1"] = [line for line in v1_stat if line.startswith("total_inactive_file ")]
    return parts


def _proc_parts() -> Parts:
    """The `/proc` parts of the probe's answer, from psutil."""
    times = psutil.cpu_times()
    fields = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    stat = "cpu " + " ".join(repr(float(getattr(times, name, 0.0))) for name in fields)
    memory = psutil.virtual_memory()
    try:
        nproc = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        nproc = psutil.cpu_count() or 0
    parts: Parts = {
        "stat": [stat],
        "uptime": [repr(max(time.time() - psutil.boot_time(), 0.0))],
        "meminfo": [
            f"MemTotal: {memory.total // 1024} kB",
            f"MemAvailable: {memory.available // 1024} kB",
        ],
        "nproc": [str(nproc)] if nproc else [],
    }
    try:
        parts["loadavg"] = [repr(psutil.getloadavg()[0])]
    except OSError:
        parts["loadavg"] = []
    return parts


def _mount_of(path: Path) -> Path:
    path = path.resolve()
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def local_disk(path: Path) -> Disk | None:
    """The file system holding `path`; None when it cannot be read."""
    try:
        mount = _mount_of(path)
        usage = psutil.disk_usage(str(mount))
        partitions = psutil.disk_partitions(all=True)
    except OSError as error:
        log.debug("cannot read the disk of %s: %s", path, error)
        return None
    # The last mount on a point is the visible one.
    matching = [p for p in partitions if p.mountpoint == str(mount)]
    source, fstype = (matching[-1].device, matching[-1].fstype) if matching else ("", None)
    return Disk(
        mount=str(mount),
        fstype=fstype or None,
        shared=is_shared(source, fstype or None),
        size_bytes=usage.total,
        used_bytes=usage.used,
        available_bytes=usage.free,
    )


def sample_machine(
    directory: Path,
    previous: SystemSample | None = None,
    *,
    cgroup_root: Path = CGROUP_ROOT,
) -> SystemSample:
    """This machine's disks (`directory`'s, then `/` if another mount), CPU and memory; no GPUs.

    Blocking (psutil, file reads): call it through `trio.to_thread.run_sync`.
    """
    disks: list[Disk] = []
    for path in (directory, Path("/")):
        disk = local_disk(path)
        if disk is not None and all(seen.mount != disk.mount for seen in disks):
            disks.append(disk)
    parts = _proc_parts() | cgroup_parts(cgroup_root)
    before = previous.cpu.times if previous is not None and previous.cpu is not None else None
    return SystemSample(
        at=time.time(),
        disks=tuple(disks),
        cpu=cpu_from_parts(parts, before),
        memory=memory_from_parts(parts),
    )


def import_pynvml() -> ModuleType:
    """NVIDIA's NVML binding (the `nvidia-ml-py` distribution)."""
    return importlib.import_module("pynvml")


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _gpu(nvml: ModuleType, index: int) -> Gpu:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    error = nvml.NVMLError

    def figure(read: Callable[[], float]) -> float | None:
        try:
            return _finite(float(read()))
        except (error, ValueError, TypeError):
            return None

    name = nvml.nvmlDeviceGetName(handle)
    if isinstance(name, bytes):
        name = name.decode(errors="replace")
    used = figure(lambda: nvml.nvmlDeviceGetMemoryInfo(handle).used)
    total = figure(lambda: nvml.nvmlDeviceGetMemoryInfo(handle).total)
    utilization = figure(lambda: nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
    power = figure(lambda: nvml.nvmlDeviceGetPowerUsage(handle))
    limit = figure(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle))
    return Gpu(
        index=index,
        name="".join(ch for ch in str(name) if ch.isprintable()),
        utilization=None if utilization is None else min(max(utilization / 100, 0.0), 1.0),
        memory_used_bytes=None if used is None else int(used),
        memory_total_bytes=None if total is None else int(total),
        temperature_celsius=figure(
            lambda: nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)
        ),
        # NVML gives milliwatts.
        power_watts=None if power is None else power / 1000,
        power_limit_watts=None if limit is None else limit / 1000,
    )


def read_gpus(nvml: ModuleType) -> tuple[Gpu, ...]:
    """Every GPU NVML sees; empty when NVML cannot start (no library, no driver, no GPU)."""
    try:
        nvml.nvmlInit()
    except Exception as error:  # NVMLError_LibraryNotFound and friends: no GPUs here
        log.debug("no GPUs: NVML cannot start: %s", error)
        return ()
    try:
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except Exception as error:
            log.debug("cannot read the GPUs: %s", error)
            count = 0
        gpus = []
        for index in range(count):
            try:
                gpus.append(_gpu(nvml, index))
            except Exception as error:  # fell off the bus, lost: the others still count
                log.debug("cannot read GPU %d: %s", index, error)
        return tuple(gpus)
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception as error:
            log.debug("cannot shut NVML down: %s", error)


class LocalSampler:
    """Samples this machine again and again, keeping the CPU counters between samples."""

    def __init__(
        self,
        directory: Path,
        *,
        nvml: Callable[[], ModuleType] | None = import_pynvml,
        cgroup_root: Path = CGROUP_ROOT,
    ) -> None:
        self.directory = directory
        self._load_nvml = nvml
        self._nvml: ModuleType | None = None
        self._cgroup_root = cgroup_root
        self.previous: SystemSample | None = None
        # Its own single slot: a read abandoned on a hung mount holds this slot, not one of
        # the 40 that every other `trio.to_thread` call of the process shares.
        self._limiter = trio.CapacityLimiter(1)
        self._warned = False

    def _nvml_module(self) -> ModuleType | None:
        if self._load_nvml is None:
            return None
        if self._nvml is None:
            try:
                self._nvml = self._load_nvml()
            except ImportError as error:
                log.debug("no GPUs: cannot import NVML: %s", error)
                self._load_nvml = None
                return None
        return self._nvml

    @property
    def stuck(self) -> bool:
        """Whether an abandoned read of an earlier sample is still running."""
        return self._limiter.borrowed_tokens > 0

    def _skip(self) -> None:
        if self._warned:
            log.debug("sample skipped: the previous one is still stuck")
            return
        self._warned = True
        log.warning(
            "a system sample is stuck (a hung mount or GPU driver?): "
            "skipping samples until it returns"
        )

    async def sample(self) -> SystemSample | None:
        """A new sample, off the event loop since psutil and NVML may block; None (skipped)
        while the read of an earlier one is still stuck.

        A read that hangs (a stuck NFS mount, a wedged driver) is abandoned on cancel, so the
        caller's time bound and Ctrl-C end the sample instead of waiting for the thread; its
        thread keeps the sampler's one slot until it returns, and samples are skipped until
        then rather than piling up more stuck threads.
        """
        if self.stuck:
            self._skip()
            return None
        machine = await trio.to_thread.run_sync(
            lambda: sample_machine(self.directory, self.previous, cgroup_root=self._cgroup_root),
            abandon_on_cancel=True,
            limiter=self._limiter,
        )
        nvml = self._nvml_module()
        gpus = (
            await trio.to_thread.run_sync(
                read_gpus, nvml, abandon_on_cancel=True, limiter=self._limiter
            )
            if nvml is not None
            else ()
        )
        sample = SystemSample(
            at=machine.at, disks=machine.disks, cpu=machine.cpu, memory=machine.memory, gpus=gpus
        )
        self.previous = sample
        return sample
