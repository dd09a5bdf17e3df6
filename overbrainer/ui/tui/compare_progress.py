"""A running compare's progress in words, from its task's events: the TUI's status line."""

from __future__ import annotations

import attrs

from overbrainer.events.types import (
    Event,
    JobStatusChanged,
    Judged,
    MarkEvent,
    PodStatusChanged,
    RunWatched,
)
from overbrainer.model.job_status import Running, status_name
from overbrainer.model.phases import Comparing, Retrieving
from overbrainer.model.pod_status import pod_line
from overbrainer.model.train_metric import EvalMark, JobStage, StageMark

RATE_AFTER = 1.0
"""Seconds of judging before a rate is shown (a first burst of verdicts says nothing)."""


@attrs.frozen
class CompareProgress:
    """What a compare (or a rejudge) is doing: its job's phase, then its judging."""

    phase: str
    judged: tuple[int, int] | None = None
    """Questions judged so far (earlier commands' included) and the compare's questions."""
    since: float | None = None
    """When the judging began: the rejudge's start, the compare's job's end, else the first
    verdict."""
    base: int = 0
    """Verdicts written before this command's judging (a resumed judging's)."""
    at: float = 0.0
    """When the latest verdict came."""
    cost: float | None = None
    """USD the judge's requests of this command cost so far (None: no price known)."""

    @classmethod
    def starting(cls, rejudge: bool, now: float) -> CompareProgress:
        """Before the job is known: `preparing`, or `judging` for a rejudge (no job)."""
        if rejudge:
            return cls("judging", since=now)
        return cls("preparing")

    def after(self, event: Event, now: float) -> CompareProgress:
        """The progress once `event` came at `now` (itself when the event says nothing new)."""
        match event:
            case RunWatched() | MarkEvent(mark=StageMark(stage=JobStage.COMPARE)):
                return attrs.evolve(self, phase=Comparing().label())
            case MarkEvent(mark=EvalMark(step=step, total=total)):
                return attrs.evolve(self, phase=Comparing(step, total).label())
            case JobStatusChanged(status=status) if not isinstance(status, Running):
                phase = f"job {status_name(status)}, {Retrieving().label()}"
                return attrs.evolve(self, phase=phase, since=now)
            case PodStatusChanged(status=status):
                return attrs.evolve(self, phase=f"pod {pod_line(status)}")
            case Judged(done=done, total=total, cost=cost):
                first = self.judged is None
                return attrs.evolve(
                    self,
                    phase="judging",
                    judged=(done, total),
                    since=now if self.since is None else self.since,
                    base=done - 1 if first else self.base,
                    at=now,
                    cost=cost,
                )
        return self

    def rate(self) -> float | None:
        """Verdicts per second this command wrote, once its judging has gone on for a second."""
        if self.since is None or self.judged is None or self.at - self.since < RATE_AFTER:
            return None
        return (self.judged[0] - self.base) / (self.at - self.since)

    def label(self) -> str:
        """`answering 3/10`, `judging 4/10, 0.8/s, $0.0012`: as the CLI's lines say it."""
        if self.judged is None:
            return self.phase
        done, total = self.judged
        parts = [f"judging {done}/{total}"]
        rate = self.rate()
        if rate is not None:
            parts.append(f"{rate:.1f}/s")
        if self.cost is not None:
            parts.append(f"${self.cost:.4f}")
        return ", ".join(parts)
