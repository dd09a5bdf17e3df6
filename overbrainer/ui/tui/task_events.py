"""What a task's events change: a stage's, a compare's or an export's progress, a followed run."""

from __future__ import annotations

import attrs

from overbrainer.events.types import (
    Event,
    ItemDone,
    ItemFailed,
    JobStatusChanged,
    MarkEvent,
    Metric,
    PodStatusChanged,
    RateLimitWait,
    Stage,
    StageFinished,
    StageStarted,
    System,
)
from overbrainer.model.job_status import Running, status_name
from overbrainer.model.phases import Exporting, Merging
from overbrainer.model.pod_status import pod_line
from overbrainer.model.train_metric import JobStage, StageMark
from overbrainer.ui.progress import wait_words
from overbrainer.ui.tui.actions import set_followed
from overbrainer.ui.tui.live import Live
from overbrainer.ui.tui.messages import TaskEvent
from overbrainer.ui.tui.state import State
from overbrainer.ui.tui.task_spec import COMPARE_KINDS, TaskKind


def _set_live(state: State, stage: Stage, live: Live) -> State:
    others = tuple((s, item) for s, item in state.live if s is not stage)
    return attrs.evolve(state, live=(*others, (stage, live)))


def take_event(state: State, message: TaskEvent) -> State:
    """The state after a task's event (its progress, its run's losses and machine)."""
    event: Event = message.event
    now = message.now
    if any(t.id == message.task and t.spec.kind is TaskKind.EXPORT for t in state.tasks):
        phase = export_phase(event)
        return state if phase is None else attrs.evolve(state, status=f"export: {phase}")
    progress = state.compare_progress
    if progress is not None and any(
        t.id == message.task and t.spec.kind in COMPARE_KINDS for t in state.tasks
    ):
        after = progress.after(event, now)
        if after == progress:
            return state
        status = f"compare: {after.label()}"
        return attrs.evolve(state, compare_progress=after, status=status)
    if isinstance(event, RateLimitWait):
        return attrs.evolve(state, status=f"{event.model}: {wait_words(event)}")
    if isinstance(event, StageStarted):
        live = Live(total=event.total, started=now, now=now, running=True)
        return _set_live(state, event.stage, live)
    if isinstance(event, ItemDone):
        live = state.live_of(event.stage)
        usage = event.usage
        if usage is None:  # already stored: skipped, not done
            return _set_live(state, event.stage, attrs.evolve(live, skipped=live.skipped + 1))
        return _set_live(
            state,
            event.stage,
            attrs.evolve(
                live,
                done=live.done + 1,
                requests=live.requests + 1,
                cost=live.cost + (event.cost or 0.0),
                tokens_in=live.tokens_in + usage.input_tokens,
                tokens_out=live.tokens_out + usage.output_tokens,
                now=now,
            ),
        )
    if isinstance(event, ItemFailed):
        live = state.live_of(event.stage)
        failed = live.failed + (not event.retryable)
        live = attrs.evolve(live, failed=failed, requests=live.requests + 1, now=now)
        return _set_live(state, event.stage, live)
    if isinstance(event, StageFinished):
        return _set_live(state, event.stage, finished(state.live_of(event.stage), event, now))
    if isinstance(event, System | Metric):
        run_id = state.task_run(message.task)
        followed = state.followed_of(run_id) if run_id is not None else None
        if followed is not None:
            return set_followed(state, followed.take(event, now))
    return state


def finished(live: Live, event: StageFinished, now: float) -> Live:
    """`live` once its stage has ended: its spend and tokens are the stage's own totals, which
    count every paid request (a judge's unscored replies, re-asks) beside the items stored."""
    stats = event.stats
    usage = stats.usage
    return attrs.evolve(
        live,
        running=False,
        now=now,
        skipped=max(live.skipped, stats.skipped),
        cost=stats.cost if stats.cost else live.cost,
        tokens_in=max(live.tokens_in, usage.input_tokens),
        tokens_out=max(live.tokens_out, usage.output_tokens),
    )


_JOB_PHASES: dict[JobStage, Merging | Exporting] = {
    JobStage.MERGE: Merging(),
    JobStage.EXPORT: Exporting(),
}


def export_phase(event: Event) -> str | None:
    """What an export's job is doing, in words, from one of its events (None: no change)."""
    if isinstance(event, JobStatusChanged) and not isinstance(event.status, Running):
        return f"job {status_name(event.status)}"  # running: its phases say more
    if isinstance(event, MarkEvent) and isinstance(event.mark, StageMark):
        phase = _JOB_PHASES.get(event.mark.stage)
        return phase.label() if phase is not None else event.mark.stage.value
    if isinstance(event, PodStatusChanged):
        return f"pod {pod_line(event.status)}"
    return None
