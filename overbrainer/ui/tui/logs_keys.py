"""The Logs view's keys: level filter, scrolling, export, a run's pod log."""

from __future__ import annotations

import logging

import attrs

from overbrainer.ui.tui.actions import Result, spawn
from overbrainer.ui.tui.effects import Cancel, Effect, ExportLogs
from overbrainer.ui.tui.messages import PodLogLines
from overbrainer.ui.tui.state import State
from overbrainer.ui.tui.task_spec import TaskKind, TaskSpec
from overbrainer.ui.tui.training_keys import selected_run

LEVELS = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR)
"""The Logs view's level filter, in the order `f` cycles through."""
LOG_PAGE = 10
POD_LOG_LINES = 20_000
"""Lines of a pod log the Logs view keeps (the newest)."""
NO_RUN_LOG = "no run yet: a pod log is a training run's (`s` shows it once there is one)"
APP_LOG = "the app's own log"


def _pod_log_run(state: State) -> str | None:
    """The run whose pod log `s` shows: the one selected in the Training view, else the newest
    with a `.pod/` folder, else the selected one (its `no pod log` line)."""
    with_log = [run for run in state.snapshot.runs if run.pod_log]  # listed oldest first
    if with_log and not state.run_picked:
        return with_log[-1].id
    return selected_run(state)


def _toggle_pod_log(state: State) -> Result:
    """Show the pod log of `_pod_log_run` (a task reads it), or go back to the app's log."""
    reading = state.reading_pod_log()
    if state.pod_log is not None or reading is not None:
        effects: list[Effect] = []
        if reading is not None and not reading.cancelling:
            effects.append(Cancel(reading.id))
        tasks = tuple(attrs.evolve(t, cancelling=True) if t == reading else t for t in state.tasks)
        back = attrs.evolve(
            state, tasks=tasks, pod_log=None, pod_log_run="", log_offset=0, status=APP_LOG
        )
        return back, effects
    run_id = _pod_log_run(state)
    if run_id is None:
        return attrs.evolve(state, status=NO_RUN_LOG), []
    spec = TaskSpec(TaskKind.POD_LOG, run_id=run_id)
    return spawn(attrs.evolve(state, status=f"reading the pod log of run {run_id}..."), spec)


def pod_log_lines(state: State, message: PodLogLines) -> State:
    """The state with a pod log's lines shown (unless `s` went back before they came)."""
    task = next((t for t in state.tasks if t.id == message.task), None)
    if task is None or task.cancelling:  # `s` went back before these came
        return state
    if message.first:
        status = f"pod log of run {message.run_id}: s or Esc goes back to {APP_LOG}"
        lines = message.lines[-POD_LOG_LINES:]
        return attrs.evolve(
            state, pod_log=lines, pod_log_run=message.run_id, log_offset=0, status=status
        )
    if state.pod_log is None:
        return state
    return attrs.evolve(state, pod_log=(*state.pod_log, *message.lines)[-POD_LOG_LINES:])


def logs_keys(state: State, key: str) -> Result:
    """The Logs view's keys: `f` level, `x` export, `s` pod log, scrolling."""
    if key == "f":
        index = LEVELS.index(state.log_level) if state.log_level in LEVELS else 1
        level = LEVELS[(index + 1) % len(LEVELS)]
        return attrs.evolve(state, log_level=level, log_offset=0), []
    if key == "x":
        return state, [ExportLogs(state.log_level)]
    if key == "s" or (key == "esc" and state.pod_log is not None):
        return _toggle_pod_log(state)
    steps = {"up": 1, "k": 1, "down": -1, "j": -1, "page up": LOG_PAGE, "page down": -LOG_PAGE}
    if key in steps:
        offset = max(state.log_offset + steps[key], 0)
        if state.pod_log is not None:  # the app's log clamps its own window
            offset = min(offset, max(len(state.pod_log) - 1, 0))
        return attrs.evolve(state, log_offset=offset), []
    if key in ("end", "G"):
        return attrs.evolve(state, log_offset=0), []
    return state, []
