"""Metrics figures: what the observer adds to `publish`, a scrape's encoding, one local sample."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import trio
import trio.lowlevel

from overbrainer.events.bus import open_event_bus
from overbrainer.events.types import (
    Event,
    ItemDone,
    ItemFailed,
    MarkEvent,
    Metric,
    RunWatched,
    Stage,
    StageModel,
    StageStarted,
    System,
)
from overbrainer.metrics.observer import MetricsObserver
from overbrainer.model.system_sample import Cpu, Disk, Gpu, Memory, SystemSample
from overbrainer.model.train_metric import EvalMark, TrainMetric
from overbrainer.model.usage import Usage
from overbrainer.system.sampler import LocalSampler

BATCH = 1000
BATCHES = 200


class NullObserver:
    """Does nothing: the baseline the metrics observer is measured against."""

    def event(self, bus: int, event: Event) -> None:
        pass

    def closed(self, bus: int) -> None:
        pass


ITEM_EVENTS: Sequence[Event] = (
    ItemDone(Stage.ANSWERS, "q1", Usage(400, 300), 0.0012),
    ItemDone(Stage.ANSWERS, "q2", Usage(400, 300), None, excluded=True),
    ItemDone(Stage.ANSWERS, "q3"),
    ItemFailed(Stage.ANSWERS, "q4", "timed out", retryable=True),
)
METRIC_EVENTS: Sequence[Event] = (
    Metric(TrainMetric(time=1.0, step=5, max_steps=100, loss=1.5, learning_rate=2e-4)),
    MarkEvent(EvalMark(3, 8)),
)
SAMPLE = SystemSample(
    at=1.0,
    disks=(Disk("/work", "ext4", False, 10**12, 4 * 10**11, 6 * 10**11),),
    cpu=Cpu(usage=0.5, load1=2.0, cpus=8.0, container=False),
    memory=Memory(2 * 10**10, 6 * 10**10),
    gpus=tuple(
        Gpu(i, "NVIDIA H100", 0.9, 10**10, 8 * 10**10, 60.0, 300.0, 700.0) for i in range(8)
    ),
)


async def publish_cost(observer: object, events: Sequence[Event]) -> float:
    """Median µs of one publish (no subscriber) with `observer`, over batches of BATCH events."""
    samples: list[float] = []
    async with open_event_bus(observer=observer) as bus:  # type: ignore[arg-type]
        bus.publish(StageStarted(Stage.ANSWERS, 10))
        bus.publish(StageModel(Stage.ANSWERS, "parent-model"))
        bus.publish(RunWatched("20260101-000000-abcd"))
        for _ in range(BATCHES):
            started = time.perf_counter()
            for index in range(BATCH):
                bus.publish(events[index % len(events)])
            samples.append((time.perf_counter() - started) / BATCH * 1e6)
            await trio.lowlevel.checkpoint()
    return statistics.median(samples)


def encode_cost(observer: MetricsObserver) -> float:
    """Median ms of one scrape's encoding."""
    samples = []
    for _ in range(50):
        started = time.perf_counter()
        observer.encode()
        samples.append((time.perf_counter() - started) * 1e3)
    return statistics.median(samples)


async def sample_times(directory: Path, count: int = 20) -> tuple[float, float]:
    """Wall ms of the first local sample (imports NVML) and the median of the next ones."""
    sampler = LocalSampler(directory)
    started = time.perf_counter()
    await sampler.sample()
    first = (time.perf_counter() - started) * 1e3
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        sample = await sampler.sample()
        samples.append((time.perf_counter() - started) * 1e3)
    assert sample is not None
    print(f"  (the sample saw {len(sample.disks)} disks and {len(sample.gpus)} GPUs)")
    return first, statistics.median(samples)


async def main() -> None:
    for name, events in (("item events", ITEM_EVENTS), ("metric events", METRIC_EVENTS)):
        base = await publish_cost(NullObserver(), events)
        with_metrics = await publish_cost(MetricsObserver(), events)
        print(
            f"publish, {name}: {with_metrics:.2f} µs with metrics, {base:.2f} µs with a no-op "
            f"observer: the metrics add {with_metrics - base:.2f} µs per event"
        )
    base = await publish_cost(NullObserver(), (System(SAMPLE),))
    with_metrics = await publish_cost(MetricsObserver(), (System(SAMPLE),))
    print(f"publish, system sample with 8 GPUs: metrics add {with_metrics - base:.2f} µs")

    observer = MetricsObserver()
    async with open_event_bus(observer=observer) as bus:
        for event in (StageStarted(Stage.ANSWERS, 1), RunWatched("r"), *METRIC_EVENTS):
            bus.publish(event)
        bus.publish(System(SAMPLE))
        for index in range(100):
            bus.publish(StageModel(Stage.ANSWERS, f"model-{index}"))
            bus.publish(ItemDone(Stage.ANSWERS, "q", Usage(1, 1), 0.1))
    print(f"scrape encoding with about 500 series: {encode_cost(observer):.2f} ms")

    with tempfile.TemporaryDirectory() as directory:
        first, median = await sample_times(Path(directory))
    print(f"local sample: first {first:.1f} ms (imports NVML), then median {median:.1f} ms")


if __name__ == "__main__":
    trio.run(main)
