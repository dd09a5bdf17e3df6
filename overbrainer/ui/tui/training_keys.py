"""The Training view's keys: start, attach, stop, cancel, resume, export, push and compare a run."""

from __future__ import annotations

import attrs

from overbrainer.ui.tui.actions import (
    Result,
    abandon_task,
    detach_task,
    move,
    refuse_busy,
    spawn,
    start_job,
)
from overbrainer.ui.tui.state import State
from overbrainer.ui.tui.task_spec import TRAINING_KINDS, Task, TaskKind, TaskSpec

CANCEL_LINES = (
    "cancel run {run}?",
    "its job is stopped and the run is recorded cancelled",
    "(what `overbrainer train cancel {run}` does)",
)
POD_HINT = "pods: `overbrainer pod ls`, `overbrainer pod rm ID`"
NO_TRAINING = "no [training] section in overbrainer.toml: add one to train (see docs/training.md)"


def selected_run(state: State) -> str | None:
    """The ID of the run selected in the Training view, if any."""
    runs = state.visible_runs()
    if not runs:
        return None
    return runs[min(state.run_index, len(runs) - 1)].id


def training_keys(state: State, key: str) -> Result:
    """The Training view's keys: start, attach, stop, cancel, resume, export, push, compare."""
    moved = move(state.run_index, key, len(state.visible_runs()))
    if moved is not None:
        return attrs.evolve(state, run_index=moved, run_picked=True), []
    if key == "x":
        return attrs.evolve(state, hide_failed=not state.hide_failed, run_index=0), []
    if key == "h":
        run_id = selected_run(state)
        if run_id is None:
            return attrs.evolve(state, status="no run selected"), []
        if any(t.spec.kind in (TaskKind.PUSH, TaskKind.PUSH_PLAN) for t in state.tasks):
            return attrs.evolve(state, status="busy: a push is running"), []
        return spawn(state, TaskSpec(TaskKind.PUSH_PLAN, run_id=run_id))
    if key == "C":
        run_id = selected_run(state)
        if run_id is None:
            return attrs.evolve(state, status="no run selected"), []
        return start_job(state, TaskSpec(TaskKind.PREPARE_COMPARE, run_id=run_id))
    if key == "E":
        run_id = selected_run(state)
        if run_id is None:
            return attrs.evolve(state, status="no run selected"), []
        return start_job(state, TaskSpec(TaskKind.EXPORT, run_id=run_id))
    if key == "p":
        return _dismiss_pod(state)
    if key == "t":
        if not state.snapshot.training:
            return attrs.evolve(state, status=NO_TRAINING), []
        refused = refuse_busy(state)
        if refused is not None:
            return refused, []
        return spawn(state, TaskSpec(TaskKind.TRAIN))
    run_id = selected_run(state)
    exporting = state.exporting()
    if key == "c" and exporting is not None:
        return abandon_task(state, exporting)
    following = next((t for t in state.tasks if t.spec.kind in TRAINING_KINDS), None)
    if key == "c":
        if run_id is None or (following is not None and not _bound(state, following)):
            if following is None:
                return attrs.evolve(state, status="no run selected"), []
            return detach_task(state, following)  # a start with no run yet: detach (or defer it)
        return _ask_cancel(state, run_id, following)
    kinds = {"a": TaskKind.ATTACH, "s": TaskKind.STOP, "T": TaskKind.RESUME}
    kind = kinds.get(key)
    if kind is None:
        return state, []
    if run_id is None:
        return attrs.evolve(state, status="no run selected"), []
    if kind in (TaskKind.ATTACH, TaskKind.RESUME) and following is not None:
        return attrs.evolve(state, status=f"busy: {following.spec.label} is running"), []
    if kind is TaskKind.RESUME:
        refused = refuse_busy(state)
        if refused is not None:
            return refused, []
    followed = kind is TaskKind.STOP and state.following(run_id) is not None
    spec = TaskSpec(kind, run_id=run_id, followed=followed)
    return spawn(attrs.evolve(state, status=f"running {spec.label}"), spec)


def _dismiss_pod(state: State) -> Result:
    """Hide the selected run's pod notices, its compares' and exports' too (the pods stay:
    `overbrainer pod rm` deletes them)."""
    runs = state.visible_runs()
    run = runs[min(state.run_index, len(runs) - 1)] if runs else None
    if run is None or not state.pod_notices(run):
        return attrs.evolve(state, status=POD_HINT), []
    shown = [(holder, pod) for holder, pod in run.kept_pods() if holder not in state.dismissed_pods]
    dismissed = (*state.dismissed_pods, *(holder for holder, _ in shown))
    pods = ", ".join(pod for _, pod in shown)
    one = len(shown) == 1
    noun, pod_noun, verb = ("notice", "pod", "stays") if one else ("notices", "pods", "stay")
    status = f"pod {noun} of run {run.id} dismissed: {pod_noun} {pods} {verb} until `pod rm`"
    return attrs.evolve(state, dismissed_pods=dismissed, status=status), []


def _bound(state: State, task: Task) -> bool:
    """Whether `task` follows a known run (a start has none until its run is created)."""
    return any(t == task.id for t, _ in state.task_runs)


def _ask_cancel(state: State, run_id: str, following: Task | None) -> Result:
    """Ask before cancelling `run_id`; while a task follows a run, `d` detaches from it."""
    lines = tuple(line.format(run=run_id) for line in CANCEL_LINES)
    status = f"cancel run {run_id}? y cancels it"
    if following is not None:
        status += f", d detaches from {following.spec.label} (the run keeps going)"
    status += (
        ", any other key does neither" if following is not None else ", any other key does not"
    )
    return attrs.evolve(
        state,
        confirm=lines,
        confirm_spec=TaskSpec(TaskKind.CANCEL, run_id=run_id),
        confirm_detach=following.id if following is not None else None,
        status=status,
    ), []
