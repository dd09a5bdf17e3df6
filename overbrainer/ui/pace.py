"""A training job's pace from its logs: steps a second over a recent window, and the ETA."""

from __future__ import annotations

from overbrainer.ui.progress import per_second

RATE_WINDOW = 60.0
"""Seconds of the job's own clock the step rate looks back over (at least two logs)."""

Pace = tuple[tuple[int, float], ...]
"""(step, job time) of the logs with a loss within `RATE_WINDOW` of the latest, oldest first."""


def paced(recent: Pace, step: int, at: float) -> Pace:
    """`recent` with the log of `step` at job time `at`, trimmed to the window."""
    if recent and (step <= recent[-1][0] or at < recent[-1][1]):
        recent = ()  # a resumed or restarted job: its pace starts again
    kept = [*recent, (step, at)]
    while len(kept) > 2 and at - kept[1][1] >= RATE_WINDOW:
        kept.pop(0)
    return tuple(kept)


def step_rate(recent: Pace) -> float | None:
    """Steps a second over the recent window; None before two logs with a loss."""
    if len(recent) < 2:
        return None
    (first, since), (latest, until) = recent[0], recent[-1]
    return per_second(latest - first, since, until)


def eta_seconds(recent: Pace, max_steps: int | None, since: float) -> float | None:
    """Seconds of training left at the recent rate, `since` seconds after the latest log
    arrived (the ETA counts down on our clock between two polls); None when it cannot be told.
    """
    rate = step_rate(recent)
    if rate is None or max_steps is None:
        return None
    return max(0.0, (max_steps - recent[-1][0]) / rate - since)
