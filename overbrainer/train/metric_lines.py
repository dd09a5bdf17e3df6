"""Parsing of `metrics.jsonl` lines (tagged by `event`) into typed metric lines."""

from __future__ import annotations

import json
import math

import attrs

from overbrainer.train.metric import EndMark, EvalMark, JobStage, Mark, StageMark, TrainMetric


class MetricLineError(ValueError):
    """A line that is not a metric line this version knows; its text names what is wrong."""


@attrs.frozen
class Begin:
    """The plugin loaded and training started."""

    time: float
    max_steps: int | None = None


@attrs.frozen
class Log:
    """A training or evaluation log."""

    metric: TrainMetric


@attrs.frozen
class Stage:
    """The job's shell started a command."""

    time: float
    name: JobStage


@attrs.frozen
class Eval:
    """An evaluation is under way: prediction step `step` (from 1) of `total`."""

    time: float
    step: int
    total: int | None = None


@attrs.frozen
class End:
    """The training loop ended at `step`."""

    time: float
    step: int


MetricLine = Begin | Log | Stage | Eval | End


def mark(line: MetricLine) -> Mark | None:
    """The mark a stage, eval or end line gives; None for begin and log lines."""
    match line:
        case Stage(name=name):
            return StageMark(name)
        case Eval(step=step, total=total):
            return EvalMark(step, total)
        case End(step=step):
            return EndMark(step)
        case _:
            return None


def _field(record: dict[str, object], key: str) -> object:
    if key not in record:
        raise MetricLineError(f"missing field `{key}`")
    return record[key]


def _float(record: dict[str, object], key: str, *, required: bool) -> float | None:
    value = record.get(key) if not required else _field(record, key)
    if value is None:
        if required:
            raise MetricLineError(f"field `{key}` is null")
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MetricLineError(f"field `{key}` is not a number")
    return float(value)


def _count(record: dict[str, object], key: str, *, required: bool) -> int | None:
    value = record.get(key) if not required else _field(record, key)
    if value is None:
        if required:
            raise MetricLineError(f"field `{key}` is null")
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MetricLineError(f"field `{key}` is not a non-negative integer")
    return value


def _time(record: dict[str, object]) -> float:
    value = _float(record, "time", required=True)
    assert value is not None
    return value


def _step(record: dict[str, object]) -> int:
    value = _count(record, "step", required=True)
    assert value is not None
    return value


def _metric(record: dict[str, object]) -> TrainMetric:
    def number(key: str) -> float | None:
        value = _float(record, key, required=False)
        return value if value is None or math.isfinite(value) else None

    return TrainMetric(
        time=_time(record),
        step=_step(record),
        epoch=number("epoch"),
        max_steps=_count(record, "max_steps", required=False),
        loss=number("loss"),
        eval_loss=number("eval_loss"),
        learning_rate=number("learning_rate"),
        grad_norm=number("grad_norm"),
    )


def parse_line(text: str | bytes) -> MetricLine:
    """One line of `metrics.jsonl`; MetricLineError for anything this version does not know."""
    try:
        record = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise MetricLineError(f"not JSON: {error}") from None
    if not isinstance(record, dict):
        raise MetricLineError("not a JSON object")
    event = record.get("event")
    match event:
        case "begin":
            return Begin(_time(record), _count(record, "max_steps", required=False))
        case "log":
            return Log(_metric(record))
        case "stage":
            name = _field(record, "name")
            try:
                stage = JobStage(name)
            except ValueError:
                raise MetricLineError(f"unknown stage `{name}`") from None
            return Stage(_time(record), stage)
        case "eval":
            return Eval(_time(record), _step(record), _count(record, "total", required=False))
        case "end":
            return End(_time(record), _step(record))
        case None:
            raise MetricLineError("no `event` field")
        case _:
            raise MetricLineError(f"unknown event `{event}`")
