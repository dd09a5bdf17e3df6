"""Parsing of `metrics.jsonl` lines (tagged by `event`) into typed metric lines."""

from __future__ import annotations

import json
import math

import attrs

from overbrainer.model.train_metric import EndMark, EvalMark, JobStage, Mark, StageMark, TrainMetric


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


def _number(record: dict[str, object], key: str) -> float | None:
    """An optional figure: a float, None when absent, null or not finite."""
    value = record.get(key)
    if type(value) is float:  # the common case first: this runs for every figure of every line
        return value if _isfinite(value) else None
    if value is None:
        return None
    number = _float(record, key, required=False)
    return number if number is not None and _isfinite(number) else None


def _metric(record: dict[str, object]) -> TrainMetric:
    get = record.get
    time, step, max_steps = get("time"), get("step"), get("max_steps")
    epoch, loss, eval_loss = get("epoch"), get("loss"), get("eval_loss")
    lr, grad_norm = get("learning_rate"), get("grad_norm")
    if (  # the common shape, checked inline: this runs for every line of a long training
        type(time) is float
        and type(step) is int
        and step >= 0
        and (max_steps is None or (type(max_steps) is int and max_steps >= 0))
        and (epoch is None or (type(epoch) is float and _isfinite(epoch)))
        and (loss is None or (type(loss) is float and _isfinite(loss)))
        and (eval_loss is None or (type(eval_loss) is float and _isfinite(eval_loss)))
        and (lr is None or (type(lr) is float and _isfinite(lr)))
        and (grad_norm is None or (type(grad_norm) is float and _isfinite(grad_norm)))
    ):
        return TrainMetric(time, step, epoch, max_steps, loss, eval_loss, lr, grad_norm)
    return TrainMetric(
        _time(record),
        _step(record),
        _number(record, "epoch"),
        _count(record, "max_steps", required=False),
        _number(record, "loss"),
        _number(record, "eval_loss"),
        _number(record, "learning_rate"),
        _number(record, "grad_norm"),
    )


_decode = json.JSONDecoder().decode
_isfinite = math.isfinite


def parse_line(text: str | bytes) -> MetricLine:
    """One line of `metrics.jsonl`; MetricLineError for anything this version does not know."""
    try:
        record = _decode(text) if isinstance(text, str) else json.loads(text)
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
