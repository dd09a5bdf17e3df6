"""What the Training view knows of a run a task follows: losses, steps, pace, its machine."""

from __future__ import annotations

import math

import attrs

from overbrainer.events.types import Event, Metric, System
from overbrainer.model.pod_status import duration_words
from overbrainer.ui.pace import Pace, eta_seconds, paced
from overbrainer.ui.tui.charts import Point
from overbrainer.ui.tui.machine import Machine

MAX_POINTS = 1000
"""Losses kept per series; past it every other one goes, so the chart keeps the whole run."""


def _added(points: tuple[Point, ...], step: int, value: float) -> tuple[Point, ...]:
    # A job that went back to an earlier step (resumed from a checkpoint) overwrites from there.
    kept = points if not points or points[-1][0] < step else tuple(p for p in points if p[0] < step)
    kept = (*kept, (float(step), value))
    if len(kept) > MAX_POINTS:
        kept = kept[::-1][::2][::-1]  # every other one, the newest kept
    return kept


@attrs.frozen
class Followed:
    """One followed run's figures, from its job's metric lines and system samples."""

    run_id: str
    losses: tuple[Point, ...] = ()
    evals: tuple[Point, ...] = ()
    step: int = 0
    max_steps: int | None = None
    pace: Pace = ()
    arrived: float | None = None
    """When the latest log with a loss reached the app, on its clock (the ETA counts down)."""
    machine: Machine = attrs.Factory(Machine)

    def take(self, event: Event, now: float) -> Followed:
        """With one event of the run's job taken into account (others change nothing)."""
        if isinstance(event, System):
            return attrs.evolve(self, machine=self.machine.add(event.sample))
        if not isinstance(event, Metric):
            return self
        m = event.metric
        new = attrs.evolve(self, step=m.step)  # back to an earlier one too, on a resume
        if m.max_steps is not None and m.max_steps > 0:
            new = attrs.evolve(new, max_steps=m.max_steps)
        if m.eval_loss is not None:
            new = attrs.evolve(new, evals=_added(new.evals, m.step, m.eval_loss))
        if m.loss is not None:
            new = attrs.evolve(
                new,
                losses=_added(new.losses, m.step, m.loss),
                pace=paced(new.pace, m.step, m.time),
                arrived=now,
            )
        return new

    def eta(self, now: float) -> float | None:
        """Seconds of training left at the recent step rate; None when it cannot be told."""
        if self.arrived is None:
            return None
        return eta_seconds(self.pace, self.max_steps, now - self.arrived)

    def progress_words(self, now: float, running: bool) -> str:
        """`step 120/400  eta 2m05s` (the ETA only while the run is running and known)."""
        if not self.step and not self.losses:
            return ""
        total = "" if self.max_steps is None else f"/{self.max_steps}"
        words = f"step {self.step}{total}"
        eta = self.eta(now) if running else None
        return words if eta is None else f"{words}  eta {duration_words(math.ceil(eta))}"
