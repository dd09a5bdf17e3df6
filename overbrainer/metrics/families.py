"""The Prometheus metric families of overbrainer and their series."""

from __future__ import annotations

from typing import Literal

import attrs
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST

CONTENT_TYPE = CONTENT_TYPE_LATEST
"""`application/openmetrics-text; version=1.0.0; charset=utf-8`."""

Labels = tuple[str, ...]


@attrs.frozen
class FamilySpec:
    """A family's name (without `_total`), type, help and label names."""

    name: str
    kind: Literal["counter", "gauge"]
    help: str
    labels: Labels


def _counter(name: str, help: str, labels: Labels) -> FamilySpec:
    return FamilySpec(name, "counter", help, labels)


def _gauge(name: str, help: str, labels: Labels) -> FamilySpec:
    return FamilySpec(name, "gauge", help, labels)


RUN = ("run_id",)
GPU = ("run_id", "gpu")

STAGE_ITEMS = _counter(
    "overbrainer_stage_items", "Items of the pipeline stages, by result", ("stage", "result")
)
TOKENS = _counter(
    "overbrainer_tokens",
    "Tokens sent (in) and received (out) by the pipeline stages",
    ("stage", "model", "direction"),
)
COST = _counter(
    "overbrainer_cost_usd",
    "Cost of the pipeline stages in USD, when the model price is known",
    ("stage", "model"),
)
STAGE_RUNNING = _gauge("overbrainer_stage_running", "Pipeline stages running now", ("stage",))
ITEM_RETRIES = _counter(
    "overbrainer_item_retries", "Failed attempts retried, since this process started", ("stage",)
)
CONCURRENCY_LIMIT = _gauge(
    "overbrainer_concurrency_limit",
    "Requests a model may have in flight now, as the adaptive limiter set it",
    ("model",),
)
TRAIN_STEP = _gauge("overbrainer_train_step", "Last optimizer step of a training run", RUN)
TRAIN_MAX_STEPS = _gauge(
    "overbrainer_train_max_steps", "Total optimizer steps of a training run, once known", RUN
)
TRAIN_PHASE = _gauge(
    "overbrainer_train_phase",
    "What the job of a followed training run does: 1 for the current phase, 0 for the others",
    ("run_id", "phase"),
)
TRAIN_LOSS = _gauge("overbrainer_train_loss", "Last training loss of a run", RUN)
EVAL_LOSS = _gauge("overbrainer_eval_loss", "Last evaluation loss of a run", RUN)
LEARNING_RATE = _gauge("overbrainer_learning_rate", "Last learning rate of a run", RUN)
RUNPOD_SPEND = _gauge(
    "overbrainer_runpod_spend_usd",
    "Estimated Runpod spend of a run in USD: rate times uptime",
    RUN,
)
DISK_USED = _gauge(
    "overbrainer_target_disk_used_bytes",
    "Bytes used on a file system of a run's target: its run directory's, and /",
    ("run_id", "mount"),
)
DISK_SIZE = _gauge(
    "overbrainer_target_disk_size_bytes",
    "Size of a file system of a run's target",
    ("run_id", "mount"),
)
CPU_USAGE = _gauge(
    "overbrainer_target_cpu_usage_ratio",
    "Share of the CPUs of a run's target busy since the previous sample",
    RUN,
)
CPU_LOAD1 = _gauge(
    "overbrainer_target_cpu_load1", "Load average over one minute on a run's target", RUN
)
CPUS = _gauge(
    "overbrainer_target_cpus", "CPUs of a run's target: its container's quota, else nproc", RUN
)
MEMORY_USED = _gauge(
    "overbrainer_target_memory_used_bytes",
    "Memory used on a run's target, page cache that can be dropped left out",
    RUN,
)
MEMORY_LIMIT = _gauge(
    "overbrainer_target_memory_limit_bytes",
    "Memory of a run's target: its container's limit, else the machine's",
    RUN,
)
SAMPLE_TIMESTAMP = _gauge(
    "overbrainer_target_sample_timestamp_seconds",
    "When the target of a run was last sampled, in Unix seconds",
    RUN,
)
GPU_UTILIZATION = _gauge(
    "overbrainer_gpu_utilization_ratio", "Share of time a GPU of a run's target ran a kernel", GPU
)
GPU_MEMORY_USED = _gauge(
    "overbrainer_gpu_memory_used_bytes", "Memory used on a GPU of a run's target", GPU
)
GPU_MEMORY_TOTAL = _gauge(
    "overbrainer_gpu_memory_total_bytes", "Memory of a GPU of a run's target", GPU
)
GPU_TEMPERATURE = _gauge(
    "overbrainer_gpu_temperature_celsius", "Temperature of a GPU of a run's target", GPU
)
GPU_POWER = _gauge("overbrainer_gpu_power_watts", "Power drawn by a GPU of a run's target", GPU)
GPU_POWER_LIMIT = _gauge(
    "overbrainer_gpu_power_limit_watts", "Power limit of a GPU of a run's target", GPU
)
GPU_INFO = _gauge(
    "overbrainer_gpu_info",
    "A GPU of a run's target, with its model name",
    ("run_id", "gpu", "name"),
)
BUILD_INFO = _gauge("overbrainer_build_info", "Version of overbrainer", ("version",))

FAMILIES: tuple[FamilySpec, ...] = (
    STAGE_ITEMS,
    TOKENS,
    COST,
    STAGE_RUNNING,
    ITEM_RETRIES,
    CONCURRENCY_LIMIT,
    TRAIN_STEP,
    TRAIN_MAX_STEPS,
    TRAIN_PHASE,
    TRAIN_LOSS,
    EVAL_LOSS,
    LEARNING_RATE,
    RUNPOD_SPEND,
    DISK_USED,
    DISK_SIZE,
    CPU_USAGE,
    CPU_LOAD1,
    CPUS,
    MEMORY_USED,
    MEMORY_LIMIT,
    SAMPLE_TIMESTAMP,
    GPU_UTILIZATION,
    GPU_MEMORY_USED,
    GPU_MEMORY_TOTAL,
    GPU_TEMPERATURE,
    GPU_POWER,
    GPU_POWER_LIMIT,
    GPU_INFO,
    BUILD_INFO,
)
"""Every family, in exposition order."""


class Family:
    """The series of one family: label values (in declared order) to value."""

    __slots__ = ("series", "spec")

    def __init__(self, spec: FamilySpec) -> None:
        self.spec = spec
        self.series: dict[Labels, float] = {}

    def inc(self, labels: Labels, by: float = 1) -> None:
        """Add `by` to a series, creating it at 0 first."""
        self.series[labels] = self.series.get(labels, 0) + by

    def set(self, labels: Labels, value: float) -> None:
        """Set a series."""
        self.series[labels] = value

    def remove(self, labels: Labels) -> None:
        """Drop a series if it exists."""
        self.series.pop(labels, None)

    def metric(self) -> Metric:
        """The family as a `prometheus_client` metric, its series in creation order."""
        spec = self.spec
        family: Metric
        if spec.kind == "counter":
            family = CounterMetricFamily(spec.name, spec.help, labels=spec.labels)
        else:
            family = GaugeMetricFamily(spec.name, spec.help, labels=spec.labels)
        for labels, value in self.series.items():
            family.add_metric(labels, value)
        return family
