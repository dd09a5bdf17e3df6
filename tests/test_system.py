"""Local samples: this machine's disks, CPU and memory, and GPUs through a fake NVML module."""

from __future__ import annotations

import ctypes.util
import logging
import os
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path

import attrs
import psutil
import pytest
import trio

from overbrainer.model.system_sample import Gpu, SystemSample
from overbrainer.system.sampler import LocalSampler, import_pynvml

MIB = 1024 * 1024


async def take(sampler: LocalSampler) -> SystemSample:
    """A sample that must not be skipped."""
    sample = await sampler.sample()
    assert sample is not None
    return sample


class FakeNVMLError(Exception):
    """The fake's `NVMLError`."""


class FakeGpuIsLost(FakeNVMLError):
    """The fake's `NVMLError_GpuIsLost`."""


class FakeNotSupported(FakeNVMLError):
    """The fake's `NVMLError_NotSupported`."""


@attrs.define
class FakeDevice:
    name: bytes | str
    gpu: float | None  # utilisation, percent
    used: int | None
    total: int | None
    temperature: float | None
    milliwatts: float | None
    limit_milliwatts: float | None
    lost: bool = False


@attrs.define
class FakeMemory:
    used: int
    total: int


@attrs.define
class FakeUtilization:
    gpu: float


@attrs.define
class FakeNVML:
    """State behind a fake `pynvml` module: the devices it reports, and who called it."""

    devices: list[FakeDevice]
    threads: set[int] = attrs.Factory(set)
    inits: int = 0
    shutdowns: int = 0
    init_error: Exception | None = None

    def module(self) -> types.ModuleType:
        module = types.ModuleType("pynvml")

        def seen() -> None:
            self.threads.add(threading.get_ident())

        def init() -> None:
            seen()
            if self.init_error is not None:
                raise self.init_error
            self.inits += 1

        def shutdown() -> None:
            self.shutdowns += 1

        def device(index: int) -> FakeDevice:
            seen()
            found = self.devices[index]
            if found.lost:
                raise FakeGpuIsLost("GPU is lost")
            return found

        def figure(value: float | None) -> float:
            if value is None:
                raise FakeNotSupported("Not Supported")
            return value

        def memory(d: FakeDevice) -> FakeMemory:
            if d.used is None or d.total is None:
                raise FakeNotSupported("Not Supported")
            return FakeMemory(d.used, d.total)

        def temperature(d: FakeDevice, sensor: int) -> float:
            assert sensor == module.NVML_TEMPERATURE_GPU
            return figure(d.temperature)

        module.NVMLError = FakeNVMLError  # type: ignore[attr-defined]
        module.NVML_TEMPERATURE_GPU = 0  # type: ignore[attr-defined]
        module.nvmlInit = init  # type: ignore[attr-defined]
        module.nvmlShutdown = shutdown  # type: ignore[attr-defined]
        module.nvmlDeviceGetCount = lambda: len(self.devices)  # type: ignore[attr-defined]
        module.nvmlDeviceGetHandleByIndex = device  # type: ignore[attr-defined]
        module.nvmlDeviceGetName = lambda d: d.name  # type: ignore[attr-defined]
        module.nvmlDeviceGetMemoryInfo = memory  # type: ignore[attr-defined]
        module.nvmlDeviceGetUtilizationRates = lambda d: FakeUtilization(figure(d.gpu))  # type: ignore[attr-defined]
        module.nvmlDeviceGetTemperature = temperature  # type: ignore[attr-defined]
        module.nvmlDeviceGetPowerUsage = lambda d: figure(d.milliwatts)  # type: ignore[attr-defined]
        module.nvmlDeviceGetEnforcedPowerLimit = lambda d: figure(d.limit_milliwatts)  # type: ignore[attr-defined]
        return module


A100 = FakeDevice(b"NVIDIA A100-SXM4-80GB", 87, 40960 * MIB, 81920 * MIB, 64, 312450, 400000)
H100 = FakeDevice("NVIDIA H100\x07 80GB HBM3", 5, None, None, None, 70000, None)


@pytest.fixture
def fake_nvml() -> Iterator[FakeNVML]:
    """A fake `pynvml` in `sys.modules`, the way the real one is imported."""
    fake = FakeNVML([attrs.evolve(A100), attrs.evolve(H100)])
    saved = sys.modules.get("pynvml")
    sys.modules["pynvml"] = fake.module()
    try:
        yield fake
    finally:
        if saved is None:
            sys.modules.pop("pynvml", None)
        else:
            sys.modules["pynvml"] = saved


async def test_nvml_gives_each_gpu_figures_off_the_event_loop(
    tmp_path: Path, fake_nvml: FakeNVML
) -> None:
    sampler = LocalSampler(tmp_path)
    with trio.fail_after(10):
        sample = await take(sampler)
    assert sample.gpus == (
        Gpu(
            index=0,
            name="NVIDIA A100-SXM4-80GB",
            utilization=0.87,
            memory_used_bytes=40 * 1024**3,
            memory_total_bytes=80 * 1024**3,
            temperature_celsius=64.0,
            power_watts=312.45,
            power_limit_watts=400.0,
        ),
        # Figures NVML does not support are unknown; control characters leave the name.
        Gpu(index=1, name="NVIDIA H100 80GB HBM3", utilization=0.05, power_watts=70.0),
    )
    assert sample.gpus[0].memory_ratio() == 0.5
    assert threading.get_ident() not in fake_nvml.threads
    assert fake_nvml.inits == fake_nvml.shutdowns == 1


async def test_a_gpu_that_disappears_between_samples_leaves_the_list(
    tmp_path: Path, fake_nvml: FakeNVML
) -> None:
    sampler = LocalSampler(tmp_path)
    with trio.fail_after(10):
        first = await take(sampler)
        fake_nvml.devices[0].lost = True  # fell off the bus: NVML still counts it
        second = await take(sampler)
        fake_nvml.devices.pop()  # gone for good
        third = await take(sampler)
    assert [gpu.index for gpu in first.gpus] == [0, 1]
    assert [gpu.name for gpu in second.gpus] == ["NVIDIA H100 80GB HBM3"]
    assert third.gpus == ()
    assert fake_nvml.inits == fake_nvml.shutdowns == 3


async def test_nvml_that_cannot_start_means_no_gpus(tmp_path: Path, fake_nvml: FakeNVML) -> None:
    fake_nvml.init_error = FakeNVMLError("NVML Shared Library Not Found")
    with trio.fail_after(10):
        assert (await take(LocalSampler(tmp_path))).gpus == ()


async def test_no_nvml_module_means_no_gpus(tmp_path: Path) -> None:
    def missing() -> types.ModuleType:
        raise ImportError("No module named 'pynvml'")

    with trio.fail_after(10):
        assert (await take(LocalSampler(tmp_path, nvml=missing))).gpus == ()
        assert (await take(LocalSampler(tmp_path, nvml=None))).gpus == ()


@pytest.mark.skipif(
    ctypes.util.find_library("nvidia-ml") is not None, reason="this machine has NVML"
)
async def test_the_real_binding_without_the_nvml_library_gives_no_gpus(tmp_path: Path) -> None:
    assert import_pynvml().__name__ == "pynvml"
    with trio.fail_after(10):
        assert (await take(LocalSampler(tmp_path))).gpus == ()


async def test_a_hung_gpu_read_is_abandoned_when_the_sample_is_cancelled(
    tmp_path: Path, fake_nvml: FakeNVML, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    monkeypatch.setattr(sys.modules["pynvml"], "nvmlInit", lambda: release.wait(10))
    sampler = LocalSampler(tmp_path)
    try:
        with trio.fail_after(5):
            with trio.move_on_after(0.2) as bound:
                await take(sampler)
        assert bound.cancelled_caught
        assert sampler.previous is None  # nothing half-recorded
    finally:
        release.set()


async def test_samples_are_skipped_while_an_abandoned_read_is_stuck(
    tmp_path: Path,
    fake_nvml: FakeNVML,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = threading.Event()
    inits: list[int] = []

    def hung_init() -> None:
        inits.append(1)
        release.wait(10)

    monkeypatch.setattr(sys.modules["pynvml"], "nvmlInit", hung_init)
    sampler = LocalSampler(tmp_path)
    try:
        with trio.fail_after(5):
            with trio.move_on_after(0.2):
                await sampler.sample()
            with caplog.at_level(logging.DEBUG, logger="overbrainer.system.sampler"):
                skipped = [await sampler.sample(), await sampler.sample()]
        assert skipped == [None, None] and sampler.stuck and inits == [1]
        assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.DEBUG]
        assert trio.to_thread.current_default_thread_limiter().borrowed_tokens == 0
    finally:
        release.set()
    with trio.fail_after(5):
        while sampler.stuck:  # noqa: ASYNC110 - the slot is freed by a callback, no event
            await trio.sleep(0.01)
        assert (await take(sampler)).gpus != ()


def is_mount_holding(mount: str, path: Path) -> bool:
    return os.path.ismount(mount) and path.resolve().is_relative_to(mount)


async def test_this_machine_has_disks_cpu_and_memory(tmp_path: Path) -> None:
    sampler = LocalSampler(tmp_path, nvml=None)
    with trio.fail_after(10):
        first = await take(sampler)
        # Some CPU time must pass between the two samples for a usage to exist.
        await trio.to_thread.run_sync(lambda: sum(range(3_000_000)))
        second = await take(sampler)
    run_disk = first.run_disk()
    assert run_disk is not None
    assert is_mount_holding(run_disk.mount, tmp_path)
    assert run_disk.size_bytes > 0 and 0 < run_disk.used_bytes <= run_disk.size_bytes
    assert [d.mount for d in first.disks][-1] == "/" or run_disk.mount == "/"
    assert len({d.mount for d in first.disks}) == len(first.disks)

    assert first.cpu is not None and second.cpu is not None
    assert first.cpu.usage is None  # nothing to compare the first sample with
    assert second.cpu.usage is not None and 0.0 <= second.cpu.usage <= 1.0
    assert second.cpu.cpus is not None and second.cpu.cpus > 0
    assert second.cpu.load1 == pytest.approx(os.getloadavg()[0], abs=2.0)

    memory = second.memory
    assert memory is not None
    assert 0 < memory.used_bytes < memory.limit_bytes <= psutil.virtual_memory().total
    assert second.at >= first.at
    assert second.gpus == ()
