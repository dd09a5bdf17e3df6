"""The running summary of a job's metric lines, and the events each line gives."""

from __future__ import annotations

import logging

import attrs

from overbrainer.events.types import MarkEvent, Metric
from overbrainer.model.train_metric import TrainMetric
from overbrainer.training.metric_lines import (
    Begin,
    End,
    Eval,
    Log,
    MetricLine,
    MetricLineError,
    Stage,
    mark,
    parse_line,
)

log = logging.getLogger(__name__)

LineEvent = Metric | MarkEvent
"""What a metric line publishes."""


@attrs.define
class MetricsSummary:
    """Counts and latest values of the lines read so far from one `metrics.jsonl`."""

    begun: bool = False
    lines: int = 0
    """begin, log, eval and end lines (stage lines are the shell's, not the plugin's)."""
    malformed: int = 0
    last_train: TrainMetric | None = None
    eval_loss: float | None = None
    step: int = 0
    max_steps: int | None = None

    def add(self, text: str | bytes) -> LineEvent | None:
        """Take one raw line; returns the event to publish, None for begin and malformed lines."""
        try:
            line = parse_line(text)
        except MetricLineError as error:
            self.malformed += 1
            log.warning("skipping a malformed metrics line: %s", error)
            return None
        return self.add_line(line)

    def add_line(self, line: MetricLine) -> LineEvent | None:
        """Take one parsed line; returns the event to publish, if any."""
        if isinstance(line, Log):  # nearly every line: before the pattern matching below
            metric = line.metric
            self.lines += 1
            if metric.step > self.step:
                self.step = metric.step
            if metric.max_steps is not None:
                self.max_steps = metric.max_steps
            if metric.eval_loss is not None:
                self.eval_loss = metric.eval_loss
            if metric.loss is not None:
                self.last_train = metric
            return Metric(metric)
        match line:
            case Begin(max_steps=max_steps):
                self.begun = True
                self.lines += 1
                if max_steps is not None:
                    self.max_steps = max_steps
                return None
            case Eval() | End():
                self.lines += 1
                if isinstance(line, End):
                    self.step = max(self.step, line.step)
            case Stage():
                pass
        found = mark(line)
        return None if found is None else MarkEvent(found)

    def describe(self) -> str:
        """`step S/M, epoch E, loss L, eval_loss X`, leaving out what is unknown."""
        if self.max_steps is not None:
            parts = [f"step {self.step}/{self.max_steps}"]
        else:
            parts = [f"step {self.step}"]
        train = self.last_train
        if train is not None and train.epoch is not None:
            parts.append(f"epoch {train.epoch:.2f}")
        if train is not None and train.loss is not None:
            parts.append(f"loss {train.loss:.4f}")
        if self.eval_loss is not None:
            parts.append(f"eval_loss {self.eval_loss:.4f}")
        return ", ".join(parts)
