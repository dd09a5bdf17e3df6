"""The Pipeline view's keys: run a stage (at once or through the `r` menu), auto mode, cancel."""

from __future__ import annotations

import attrs

from overbrainer.events.types import Stage
from overbrainer.ui.tui.actions import Result, move, refuse_busy, spawn
from overbrainer.ui.tui.auto_plan import AUTO_ASK, AUTO_ASK_TRAINING, ESTIMATING, confirm_lines
from overbrainer.ui.tui.effects import Cancel
from overbrainer.ui.tui.messages import AutoPrepared
from overbrainer.ui.tui.run_menu import Choice, RunMenu, menu_key
from overbrainer.ui.tui.state import State
from overbrainer.ui.tui.task_spec import TRAINING_KINDS, TaskKind, TaskSpec

STAGES = (Stage.SUBTOPICS, Stage.QUESTIONS, Stage.ANSWERS, Stage.QUALITY, Stage.SPLIT)
"""The Pipeline view's stages: `run`'s, with `quality` (it runs only with a `[quality] judge`)."""


def pipeline_keys(state: State, key: str) -> Result:
    """The Pipeline view's keys: move, `r` menu, Enter, `A` auto, `c` cancel."""
    moved = move(state.stage_index, key, len(STAGES))
    if moved is not None:
        return attrs.evolve(state, stage_index=moved), []
    if key in ("r", "enter"):
        refused = refuse_busy(state)
        if refused is not None:
            return refused, []
        menu = RunMenu(STAGES[state.stage_index])
        if key == "enter":  # at once, on every topic, without --force
            return run_stage(state, menu.spec())
        status = f"run {menu.spec().label}? r or Enter runs it, Esc or n does not"
        return attrs.evolve(state, run_menu=menu, status=status), []
    if key == "A":
        refused = refuse_busy(state)
        if refused is not None:
            return refused, []
        if any(t.spec.kind is TaskKind.ESTIMATE_RUN for t in state.tasks):
            return attrs.evolve(state, status=ESTIMATING), []
        # Paid: as for `C` and `h`, asked first, with `overbrainer estimate`'s lines.
        return spawn(attrs.evolve(state, status=ESTIMATING), TaskSpec(TaskKind.ESTIMATE_RUN))
    if key == "c":
        return cancel_data(state)
    return state, []


def run_stage(state: State, spec: TaskSpec) -> Result:
    """Run the stage `spec` stands for, unless the data lock is taken."""
    refused = refuse_busy(state)
    if refused is not None:
        return refused, []
    return spawn(attrs.evolve(state, status=f"running {spec.label}"), spec)


def run_menu_key(state: State, menu: RunMenu, key: str) -> Result:
    """A key while the `r` menu is up: change it, run its stage, or close it."""
    menu, choice, status = menu_key(menu, key, state.snapshot.topics)
    if choice is Choice.RUN:
        return run_stage(attrs.evolve(state, run_menu=None), menu.spec())
    if choice is Choice.CLOSE:
        return attrs.evolve(state, run_menu=None, status=status), []
    status = status or f"run {menu.spec().label}? r or Enter runs it, Esc or n does not"
    return attrs.evolve(state, run_menu=menu, status=status), []


def cancel_data(state: State) -> Result:
    """Stop the running stage (`c`); training runs are not stopped here."""
    busy = state.busy()
    if busy is None or busy.spec.kind in TRAINING_KINDS:
        return attrs.evolve(state, status="no stage is running"), []
    tasks = tuple(attrs.evolve(t, cancelling=True) if t == busy else t for t in state.tasks)
    status = f"stopping {busy.spec.label}..."
    return attrs.evolve(state, tasks=tasks, status=status), [Cancel(busy.id)]


def auto_prepared(state: State, message: AutoPrepared) -> State:
    """The `A` confirmation once the run is estimated (or why it could not be)."""
    if message.error is not None:
        return attrs.evolve(state, status=f"cannot estimate overbrainer run: {message.error}")
    if state.confirm:  # another question is up: never replace it unanswered
        return attrs.evolve(state, status="not asked: another question was open (A asks again)")
    training = state.snapshot.training
    lines = confirm_lines(message.lines, training)
    status = f"run overbrainer run? {AUTO_ASK_TRAINING if training else AUTO_ASK}"
    return attrs.evolve(state, confirm=lines, confirm_spec=TaskSpec(TaskKind.AUTO), status=status)
