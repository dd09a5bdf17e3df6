"""The steps the views share: start, stop or refuse a task, move a selection."""

from __future__ import annotations

import attrs

from overbrainer.ui.tui.compare_progress import CompareProgress
from overbrainer.ui.tui.effects import Abandon, Cancel, Effect, Exit, Spawn
from overbrainer.ui.tui.followed import Followed
from overbrainer.ui.tui.state import State
from overbrainer.ui.tui.task_spec import COMPARE_KINDS, TRAINING_KINDS, Task, TaskKind, TaskSpec

FOLLOW_AFRESH = frozenset({TaskKind.ATTACH, TaskKind.STOP})
"""Tasks that follow an existing run: what was seen of it starts again (a resume's run is new)."""
PREPARING = "planning the compare (and pricing its pod)..."
PREPARE_BUSY = "busy: a compare is being planned"
Result = tuple[State, list[Effect]]


def spawn(state: State, spec: TaskSpec) -> Result:
    """Start `spec` as the next task (a compare's progress and a followed run start with it)."""
    task = Task(state.next_task, spec)
    new = attrs.evolve(state, tasks=(*state.tasks, task), next_task=state.next_task + 1)
    if spec.kind in COMPARE_KINDS:
        progress = CompareProgress.starting(spec.kind is TaskKind.REJUDGE, state.now)
        new = attrs.evolve(new, compare_progress=progress)
    if spec.run_id is not None and spec.kind in TRAINING_KINDS:
        new = attrs.evolve(new, task_runs=(*new.task_runs, (task.id, spec.run_id)))
    if spec.run_id is not None and spec.kind in FOLLOW_AFRESH and not spec.followed:
        new = set_followed(new, Followed(spec.run_id))  # its job's lines are read from the start
    return new, [Spawn(task.id, spec)]


def without(state: State, task_id: int) -> State:
    """The state without task `task_id` (it has ended)."""
    return attrs.evolve(state, tasks=tuple(t for t in state.tasks if t.id != task_id))


def exit_if_done(state: State) -> list[Effect]:
    """Exit when quitting and no work is left running."""
    return [Exit()] if state.quitting and not state.work() else []


def set_followed(state: State, followed: Followed) -> State:
    """The state with `followed` replacing what was seen of its run."""
    others = tuple(f for f in state.followed if f.run_id != followed.run_id)
    return attrs.evolve(state, followed=(*others, followed))


def move(index: int, key: str, length: int) -> int | None:
    """The new selection after an up/down key, or None for another key."""
    if key in ("up", "k"):
        return max(index - 1, 0)
    if key in ("down", "j"):
        return min(index + 1, max(length - 1, 0))
    if key == "home":
        return 0
    if key == "end":
        return max(length - 1, 0)
    return None


def refuse_busy(state: State) -> State | None:
    """The state with a refusal shown when the data lock is taken, else None."""
    busy = state.busy()
    if busy is None:
        return None
    return attrs.evolve(state, status=f"busy: {busy.spec.label} is running (c cancels it)")


def detach_task(state: State, task: Task) -> Result:
    """Stop following `task`'s run: the run keeps going."""
    tasks = tuple(attrs.evolve(t, cancelling=True) if t == task else t for t in state.tasks)
    status = f"detaching from {task.spec.label}: the run keeps going"
    return attrs.evolve(state, tasks=tasks, status=status), [Cancel(task.id)]


def abandon_task(state: State, task: Task) -> Result:
    """Stop a compare or an export: its job is cancelled (a pod it started is deleted)."""
    tasks = tuple(attrs.evolve(t, cancelling=True) if t == task else t for t in state.tasks)
    status = f"stopping {task.spec.label}..."
    return attrs.evolve(state, tasks=tasks, status=status), [Abandon(task.id)]


def job_refused(state: State) -> State | None:
    """The state saying why no compare or export may start now; None when one may."""
    if state.preparing() is not None:
        return attrs.evolve(state, status=PREPARE_BUSY)
    running = state.comparing() or state.exporting()
    if running is not None:
        return attrs.evolve(state, status=f"busy: {running.spec.label} is running (c cancels it)")
    return refuse_busy(state)


def start_job(state: State, spec: TaskSpec) -> Result:
    """Spawn a compare (its plan first, for the confirmation) or an export: one at a time,
    refused while the data lock is taken."""
    refused = job_refused(state)
    if refused is not None:
        return refused, []
    if spec.kind is TaskKind.PREPARE_COMPARE:
        return spawn(attrs.evolve(state, status=PREPARING), spec)
    return spawn(attrs.evolve(state, status=f"running {spec.label}"), spec)
