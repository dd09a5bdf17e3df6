"""The live bar of a followed training job: steps, epoch, losses, pace, phase, pod spend."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import attrs

from overbrainer.events.types import Event, JobStatusChanged, MarkEvent, Metric, PodSpend
from overbrainer.model.job_status import JobStatus, is_finished, status_name
from overbrainer.model.phases import Phases
from overbrainer.model.pod_status import duration_words
from overbrainer.ui.bar_frame import two_lines
from overbrainer.ui.pace import Pace, eta_seconds, paced, step_rate
from overbrainer.ui.progress import rate_words

if TYPE_CHECKING:
    from rich.console import RenderableType


def _number(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


@attrs.define
class TrainTally:
    """What the bar of one followed training job shows, from its events.

    The step rate is taken on the job's clock (the logs' own times), since logs arrive here
    in batches, one per poll; the ETA then counts down on ours from the latest log's arrival.
    """

    started: float
    step: int = 0
    max_steps: int | None = None
    epoch: float | None = None
    loss: float | None = None
    eval_loss: float | None = None
    recent: Pace = ()
    """(step, job time) of the logs with a loss within `RATE_WINDOW` of the latest."""
    arrived: float | None = None
    """When the latest log with a loss arrived, on our clock."""
    phases: Phases = attrs.Factory(Phases)
    status: JobStatus | None = None
    exited: float | None = None
    """When the job was seen finished, on our clock."""
    cost_per_hour: float | None = None
    spent: float | None = None
    last: bool = False
    """The flow moved on (a result line, a new run, the bus closed): the frame that stays."""

    def apply(self, event: Event, now: float) -> None:
        """Take one event of the followed job into account."""
        match event:
            case Metric(metric=m):
                self.phases.metric(m)
                self.step = max(self.step, m.step)
                if m.max_steps is not None and m.max_steps > 0:
                    self.max_steps = m.max_steps
                if m.epoch is not None:
                    self.epoch = m.epoch
                if m.eval_loss is not None:
                    self.eval_loss = m.eval_loss
                if m.loss is not None:
                    self.loss = m.loss
                    self.recent = paced(self.recent, m.step, m.time)
                    self.arrived = now
            case MarkEvent(mark=mark):
                self.phases.mark(mark)
            case JobStatusChanged(status=status):
                self.status = status
                if is_finished(status) and self.exited is None:
                    self.exited = now
            case PodSpend(cost_per_hour=rate, spent=spent):
                self.cost_per_hour, self.spent = rate, spent
            case _:
                pass

    def rate(self) -> float | None:
        """Steps a second over the recent window; None before two logs with a loss."""
        return step_rate(self.recent)

    def eta(self, now: float) -> float | None:
        """Seconds of training left at the recent rate; None while it cannot be told."""
        if self.arrived is None:
            return None
        return eta_seconds(self.recent, self.max_steps, now - self.arrived)

    def count_words(self) -> str:
        """`12/20 steps, epoch 0.60` (`12 steps` while the total is unknown)."""
        total = "" if self.max_steps is None else f"/{self.max_steps}"
        words = f"{self.step}{total} steps"
        if self.epoch is not None:
            words += f", epoch {self.epoch:.2f}"
        return words

    def time_words(self, now: float) -> str:
        """`9.5 it/s, ETA 1m02s` while it trains, `9.5 it/s, took 2m10s` once the job ended."""
        rate = self.rate()
        speed = "– it/s" if rate is None else rate_words(rate, "it")
        if self.exited is not None:
            return f"{speed}, took {duration_words(self.exited - self.started)}"
        eta = self.eta(now)
        return f"{speed}, ETA {'–' if eta is None else duration_words(math.ceil(eta))}"

    def phase_words(self) -> str:
        """What the job does now; once the flow moved on, how the job ended."""
        if self.last and self.status is not None and is_finished(self.status):
            return f"job {status_name(self.status)}"
        exited = self.status is not None and is_finished(self.status)
        return self.phases.phase(exited).label()

    def detail_words(self) -> str:
        """The phase, the losses, and on a pod its rate and spend so far."""
        words = (
            f"{self.phase_words()} · loss {_number(self.loss, 4)} · "
            f"eval loss {_number(self.eval_loss, 4)}"
        )
        if self.cost_per_hour is not None:
            words += f" · pod ${self.cost_per_hour:.2f}/h, ${_number(self.spent, 2)} so far"
        return words

    def renderable(self, now: float) -> RenderableType:
        """Two lines: the bar with steps, epoch, rate and ETA; then phase, losses, spend."""
        words = f"{self.count_words()}  {self.time_words(now)}"
        return two_lines("train", self.max_steps, self.step, words, self.detail_words())
