"""The Prometheus metrics of a project: an events `Observer` that counts what its buses tell.

Counters start from the stage history and then follow every bus built with this observer,
so they are cumulative per project; retries are not in the history and restart at zero with
each process. The endpoint that serves them is `overbrainer.metrics.endpoint.open_metrics`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator, Sequence

import attrs
from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from overbrainer import __version__
from overbrainer.events.types import (
    PIPELINE_STAGES,
    ConcurrencyChanged,
    Event,
    ItemDone,
    ItemFailed,
    JobStatusChanged,
    MarkEvent,
    RunWatched,
    Stage,
    StageFinished,
    StageModel,
    StageStarted,
    System,
    item_result,
)
from overbrainer.events.types import Metric as MetricEvent
from overbrainer.metrics.families import (
    BUILD_INFO,
    CONCURRENCY_LIMIT,
    COST,
    CPU_LOAD1,
    CPU_USAGE,
    CPUS,
    DISK_SIZE,
    DISK_USED,
    EVAL_LOSS,
    FAMILIES,
    GPU_INFO,
    GPU_MEMORY_TOTAL,
    GPU_MEMORY_USED,
    GPU_POWER,
    GPU_POWER_LIMIT,
    GPU_TEMPERATURE,
    GPU_UTILIZATION,
    ITEM_RETRIES,
    LEARNING_RATE,
    MEMORY_LIMIT,
    MEMORY_USED,
    RUNPOD_SPEND,
    SAMPLE_TIMESTAMP,
    STAGE_ITEMS,
    STAGE_RUNNING,
    TOKENS,
    TRAIN_LOSS,
    TRAIN_MAX_STEPS,
    TRAIN_PHASE,
    TRAIN_STEP,
    Family,
    FamilySpec,
    Labels,
)
from overbrainer.metrics.spend import SpendSource, pod_spends
from overbrainer.model.job_status import is_finished
from overbrainer.model.phases import PHASE_NAMES, Phases
from overbrainer.model.system_sample import SystemSample
from overbrainer.model.train_metric import TrainMetric
from overbrainer.project.directory import Project
from overbrainer.storage import HistoryRecord, read_history

log = logging.getLogger(__name__)

UNKNOWN_MODEL = "unknown"
"""Model label of tokens and cost of a stage that named no model."""


@attrs.define
class _Followed:
    """What one bus said so far that labels its next events."""

    models: dict[Stage, str] = attrs.field(factory=dict)
    running: list[Stage] = attrs.field(factory=list)
    run_id: str | None = None
    system: list[tuple[Family, Labels]] = attrs.field(factory=list)
    phases: Phases = attrs.field(factory=Phases)
    exited: bool = False
    phase: str | None = None  # the phase whose series holds 1 now; None before any series


class MetricsObserver(Collector):
    """Every metric family of a project, fed by the events of the buses it observes."""

    def __init__(
        self,
        history: Iterable[HistoryRecord] = (),
        *,
        spend: SpendSource | None = None,
        version: str = __version__,
    ) -> None:
        self._families = {spec.name: Family(spec) for spec in FAMILIES}
        # The families every item event touches, kept at hand: publish runs this per event.
        self._items = self._family(STAGE_ITEMS)
        self._tokens = self._family(TOKENS)
        self._cost = self._family(COST)
        self._retries = self._family(ITEM_RETRIES)
        self._concurrency = self._family(CONCURRENCY_LIMIT)
        self._running = self._family(STAGE_RUNNING)
        self._phase = self._family(TRAIN_PHASE)
        self._train_gauges = tuple(
            self._family(spec) for spec in (TRAIN_MAX_STEPS, TRAIN_LOSS, EVAL_LOSS, LEARNING_RATE)
        )
        self._step = self._family(TRAIN_STEP)
        self._spend = spend
        self._buses: dict[int, _Followed] = {}
        # Trio runs publishers and scrapes on one thread; the lock keeps a scrape from another
        # thread (a test, a library) from seeing half an update.
        self._lock = threading.Lock()
        self.registry = CollectorRegistry(auto_describe=False)
        """A registry of its own holding these families only."""
        self.registry.register(self)
        self._family(BUILD_INFO).set((version,), 1)
        for stage in PIPELINE_STAGES:
            self._running.set((stage.value,), 0)
        for record in history:
            self._seed(record)

    @classmethod
    def for_project(cls, project: Project) -> MetricsObserver:
        """Metrics seeded from the project's history, with the Runpod spend of its runs."""
        try:
            history: Sequence[HistoryRecord] = read_history(project.history)
        except OSError as error:
            log.warning("cannot read the stage history, the metrics start from zero: %s", error)
            history = ()
        return cls(history, spend=lambda: pod_spends(project.runs))

    def _family(self, spec: FamilySpec) -> Family:
        return self._families[spec.name]

    def _seed(self, record: HistoryRecord) -> None:
        stage = record.stage.value
        for result, count in (
            ("done", record.done),
            ("skipped", record.skipped),
            ("failed", record.failed),
            ("excluded", record.excluded),
        ):
            if count > 0:
                self._items.inc((stage, result), count)
        if record.model is not None:
            self._spent(stage, record.model, record.input_tokens, record.output_tokens)
            if record.cost is not None:
                self._cost.inc((stage, record.model), record.cost)

    def _spent(self, stage: str, model: str, tokens_in: int, tokens_out: int) -> None:
        self._tokens.inc((stage, model, "in"), tokens_in)
        self._tokens.inc((stage, model, "out"), tokens_out)

    def event(self, bus: int, event: Event) -> None:
        """Count one event of bus `bus`."""
        with self._lock:
            followed = self._buses.get(bus)
            if followed is None:
                followed = self._buses[bus] = _Followed()
            self._follow(followed, event)

    def closed(self, bus: int) -> None:
        """Bus `bus` ended: its unfinished stages stop running, its live series go."""
        with self._lock:
            followed = self._buses.pop(bus, None)
            if followed is None:
                return
            for stage in followed.running:
                # A stage that failed or was interrupted never finished.
                self._running.inc((stage.value,), -1)
            self._clear_system(followed)
            self._clear_phase(followed)

    def _follow(self, followed: _Followed, event: Event) -> None:
        result = item_result(event)
        if result is not None:
            # `_value_` rather than `.value`: the enum property costs a descriptor call per use.
            self._items.inc((result[0]._value_, result[1]._value_))
        match event:
            case ItemDone(stage=stage, usage=usage, cost=cost) if usage is not None:
                name = stage._value_
                model = followed.models.get(stage, UNKNOWN_MODEL)
                self._spent(name, model, usage.input_tokens, usage.output_tokens)
                if cost is not None:
                    self._cost.inc((name, model), cost)
            case ItemFailed(stage=stage, retryable=True):
                self._retries.inc((stage._value_,))
            case ConcurrencyChanged(model=model, new=new):
                self._concurrency.set((model,), new)
            case StageStarted(stage=stage):
                self._running.inc((stage._value_,))
                followed.running.append(stage)
            case StageModel(stage=stage, model=model):
                followed.models[stage] = model
            case StageFinished(stage=stage, stats=stats):
                self._finished(followed, stage, stats.excluded)
            case RunWatched(run_id=run_id):
                self._clear_system(followed)
                self._clear_phase(followed)
                followed.run_id = run_id
                followed.phases = Phases()
                followed.exited = False
            case MetricEvent(metric=metric):
                followed.phases.metric(metric)
                if followed.run_id is not None:
                    self._train(followed.run_id, metric)
                    self._set_phase(followed)
            case MarkEvent(mark=mark):
                followed.phases.mark(mark)
                self._set_phase(followed)
            case JobStatusChanged(status=status):
                followed.exited = is_finished(status)
                self._set_phase(followed)
            case System(sample=sample) if followed.run_id is not None:
                self._clear_system(followed)
                self._set_system(followed, followed.run_id, sample)
            case _:
                pass  # pod status, pushes, judging: not metrics

    def _finished(self, followed: _Followed, stage: Stage, excluded: int) -> None:
        # Split publishes no item events: its exclusions come with its end, as its history
        # line has them. The other stages count them per item.
        if stage is Stage.SPLIT and excluded > 0:
            self._items.inc((stage.value, "excluded"), excluded)
        if stage in followed.running:
            followed.running.remove(stage)
            self._running.inc((stage.value,), -1)

    def _train(self, run_id: str, metric: TrainMetric) -> None:
        labels = (run_id,)
        self._step.set(labels, metric.step)
        values = (metric.max_steps, metric.loss, metric.eval_loss, metric.learning_rate)
        for family, value in zip(self._train_gauges, values, strict=True):
            if value is not None:
                family.set(labels, value)

    def _set_phase(self, followed: _Followed) -> None:
        run_id = followed.run_id
        if run_id is None:
            return
        current = followed.phases.phase(followed.exited).name()
        previous = followed.phase
        if current == previous:
            return  # the series already say so; this runs for every metric line
        followed.phase = current
        if previous is None:
            for name in PHASE_NAMES:
                self._phase.set((run_id, name), 1 if name == current else 0)
        else:
            self._phase.set((run_id, previous), 0)
            self._phase.set((run_id, current), 1)

    def _clear_phase(self, followed: _Followed) -> None:
        followed.phase = None
        if followed.run_id is None:
            return
        for name in PHASE_NAMES:
            self._phase.remove((followed.run_id, name))

    def _clear_system(self, followed: _Followed) -> None:
        for family, labels in followed.system:
            family.remove(labels)
        followed.system.clear()

    def _set_system(self, followed: _Followed, run_id: str, sample: SystemSample) -> None:
        def put(spec: FamilySpec, labels: Labels, value: float | None) -> None:
            if value is not None:
                family = self._family(spec)
                family.set(labels, value)
                followed.system.append((family, labels))

        for disk in sample.disks:
            if disk.shared:
                continue  # a network file system reports the whole cluster
            put(DISK_USED, (run_id, disk.mount), disk.used_bytes)
            put(DISK_SIZE, (run_id, disk.mount), disk.size_bytes)
        if sample.cpu is not None:
            put(CPU_USAGE, (run_id,), sample.cpu.usage)
            put(CPU_LOAD1, (run_id,), sample.cpu.load1)
            put(CPUS, (run_id,), sample.cpu.cpus)
        if sample.memory is not None:
            put(MEMORY_USED, (run_id,), sample.memory.used_bytes)
            put(MEMORY_LIMIT, (run_id,), sample.memory.limit_bytes)
        put(SAMPLE_TIMESTAMP, (run_id,), sample.at)
        for gpu in sample.gpus:
            labels = (run_id, str(gpu.index))
            put(GPU_UTILIZATION, labels, gpu.utilization)
            put(GPU_MEMORY_USED, labels, gpu.memory_used_bytes)
            put(GPU_MEMORY_TOTAL, labels, gpu.memory_total_bytes)
            put(GPU_TEMPERATURE, labels, gpu.temperature_celsius)
            put(GPU_POWER, labels, gpu.power_watts)
            put(GPU_POWER_LIMIT, labels, gpu.power_limit_watts)
            put(GPU_INFO, (*labels, gpu.name), 1)

    def read_spends(self) -> list[tuple[str, float]] | None:
        """The Runpod spend of each run now; None without a source or when it cannot be read.

        Blocking (it reads pod records): every scrape calls it, in the registry's `collect`.
        """
        if self._spend is None:
            return None
        try:
            return list(self._spend())
        except Exception as error:  # a scrape must never fail on the spend
            log.debug("metrics: cannot read the Runpod spend: %s", error)
            return None

    def collect(self) -> Iterator[Metric]:
        """Every family as it is now, the Runpod spend read again (the registry's hook)."""
        spends = self.read_spends()
        with self._lock:
            if spends is not None:
                family = self._family(RUNPOD_SPEND)
                # A run removed since the last scrape leaves no series behind.
                family.series.clear()
                for run_id, spend in spends:
                    family.set((run_id,), spend)
            return iter([family.metric() for family in self._families.values()])

    def encode(self) -> bytes:
        """The OpenMetrics text of the registry: every family, one snapshot (reads the spend).

        Blocking (it reads pod records): the endpoint calls it through `trio.to_thread`.
        """
        return bytes(generate_latest(self.registry))  # type: ignore[no-untyped-call]
