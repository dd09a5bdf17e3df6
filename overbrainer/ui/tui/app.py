"""The TUI as a pure state machine: `update(state, message)` returns the new state and effects."""

from __future__ import annotations

import attrs

from overbrainer.events.frontend import Line, RunCreated
from overbrainer.events.types import JobStatusChanged, Stage
from overbrainer.ui.tui.actions import (
    Result,
    detach_task,
    exit_if_done,
    refuse_busy,
    set_followed,
    spawn,
    without,
)
from overbrainer.ui.tui.auto_plan import tui_words
from overbrainer.ui.tui.compare_keys import compare_keys
from overbrainer.ui.tui.dataset_keys import dataset_keys, rekeyed, same_row
from overbrainer.ui.tui.effects import Abandon, Cancel, Effect, Exit, OpenEditor
from overbrainer.ui.tui.followed import Followed
from overbrainer.ui.tui.logs_keys import logs_keys, pod_log_lines
from overbrainer.ui.tui.messages import (
    AutoPrepared,
    ComparePrepared,
    ConfigChanged,
    Counted,
    EditorDone,
    Glimpsed,
    Key,
    Loaded,
    Msg,
    Notice,
    PodLogLines,
    Previewed,
    PushPlanned,
    Rekeyed,
    Resized,
    Sampled,
    SignalMsg,
    TaskDone,
    TaskEvent,
    TaskLagged,
    TaskReport,
    Tick,
)
from overbrainer.ui.tui.pipeline_keys import auto_prepared, pipeline_keys, run_menu_key
from overbrainer.ui.tui.state import State, View
from overbrainer.ui.tui.task_events import take_event
from overbrainer.ui.tui.task_spec import (
    COMPARE_KINDS,
    DATA_KINDS,
    JOB_KINDS,
    READ_KINDS,
    TRAINING_KINDS,
    TaskKind,
    TaskSpec,
)
from overbrainer.ui.tui.training_keys import training_keys

KEPT_LINES = 200
PREVIEW_EVERY = 1.0
"""Seconds between two reads of the latest answer while answers are being stored."""
COUNT_EVERY = 1.0
"""Seconds between two counts of the stored records while a stage runs (the records column)."""
COMPARE_WRITTEN = "compare written: see the Compare view"
PREPARED_LATE = "compare not asked: another question was open (C plans it again)"
DISMISSED = {
    TaskKind.PUSH: "not pushed",
    TaskKind.CANCEL: "not cancelled",
    TaskKind.DELETE: "not deleted",
    TaskKind.COMPARE: "not compared",
    TaskKind.REJUDGE: "not rejudged",
    TaskKind.AUTO: "not run",
}
PIPELINE_DONE = "done: "
"""The status once a stage or `run` started here has ended (then: its command line)."""
QUIT_QUESTION = "work is running: quit and stop it? y/n (followed runs keep training)"


def start(state: State, *, auto: bool = False) -> Result:
    """The first effects: read the project, and with `auto` run `overbrainer run` at once."""
    state, effects = spawn(state, TaskSpec(TaskKind.LOAD))
    if not auto:
        return state, effects
    state, more = spawn(
        attrs.evolve(state, status="auto: running overbrainer run"), TaskSpec(TaskKind.AUTO)
    )
    return state, effects + more


def update(state: State, message: Msg) -> Result:
    """The new state and the effects `message` calls for."""
    if isinstance(message, Key):
        return _key(state, message.key)
    if isinstance(message, Notice):
        return attrs.evolve(state, status=message.text), []
    if isinstance(message, Resized):
        return attrs.evolve(state, cols=message.cols, rows=message.rows), []
    if isinstance(message, TaskEvent):
        state = take_event(state, message)
        loading = any(t.spec.kind is TaskKind.LOAD for t in state.tasks)
        if isinstance(message.event, JobStatusChanged) and not loading:
            return spawn(state, TaskSpec(TaskKind.LOAD))  # the run's new state, listed
        return state, []
    if isinstance(message, TaskLagged):
        return attrs.evolve(state, status=f"{message.n} progress events skipped"), []
    if isinstance(message, TaskReport):
        state = _report(state, message)
        if isinstance(message.report, RunCreated):  # list the new run at once
            return spawn(state, TaskSpec(TaskKind.LOAD))
        return state, []
    if isinstance(message, TaskDone):
        return _done(state, message)
    if isinstance(message, Rekeyed):
        return rekeyed(state, message), []
    if isinstance(message, Loaded):
        kept = without(state, message.task)
        runs = len(message.snapshot.runs)
        before = kept.snapshot
        kept = attrs.evolve(kept, snapshot=message.snapshot)
        run_index = min(kept.run_index, max(runs - 1, 0))
        listed = [run.id for run in kept.visible_runs()]
        select = kept.select_run
        if select is not None and select in listed:  # a run this session started: show it
            run_index, select = listed.index(select), None
        return attrs.evolve(
            kept,
            run_index=run_index,
            select_run=select,
            tree_index=same_row(before.tree, kept.tree_index, message.snapshot.tree),
            compare_index=min(kept.compare_index, max(len(message.snapshot.compares) - 1, 0)),
        ), exit_if_done(kept)
    if isinstance(message, PushPlanned):
        kept = without(state, message.task)
        if message.error is not None:
            return attrs.evolve(kept, status=f"push refused: {message.error}"), []
        spec = TaskSpec(TaskKind.PUSH, run_id=message.run_id)
        status = f"push run {message.run_id}? y pushes, any other key does not"
        return attrs.evolve(kept, confirm=message.lines, confirm_spec=spec, status=status), []
    if isinstance(message, ComparePrepared):
        kept = without(state, message.task)
        if message.error is not None:
            return attrs.evolve(kept, status=message.error), exit_if_done(kept)
        if kept.quitting:
            return kept, exit_if_done(kept)
        if kept.confirm:  # another question is up: never replace it unanswered
            return attrs.evolve(kept, status=PREPARED_LATE), []
        spec = TaskSpec(TaskKind.COMPARE, run_id=message.run_id)
        status = f"compare run {message.run_id}? y compares, n or Esc does not"
        return attrs.evolve(kept, confirm=message.lines, confirm_spec=spec, status=status), []
    if isinstance(message, AutoPrepared):
        kept = without(state, message.task)
        if kept.quitting:
            return kept, exit_if_done(kept)
        return auto_prepared(kept, message), []
    if isinstance(message, PodLogLines):
        return pod_log_lines(state, message), []
    if isinstance(message, Glimpsed):  # the first screen, before a big dataset is indexed
        glimpse = message.snapshot
        snapshot = attrs.evolve(
            state.snapshot,
            name=glimpse.name,
            config=glimpse.config,
            counts=glimpse.counts,
            history=glimpse.history,
            training=glimpse.training,
            topics=glimpse.topics,
        )
        return attrs.evolve(state, snapshot=snapshot), []
    if isinstance(message, Counted):
        kept = without(state, message.task)
        snapshot = attrs.evolve(kept.snapshot, counts=message.counts)
        return attrs.evolve(kept, snapshot=snapshot), exit_if_done(kept)
    if isinstance(message, Previewed):
        kept = without(state, message.task)
        return attrs.evolve(kept, preview=message.text or kept.preview), exit_if_done(kept)
    if isinstance(message, Sampled):
        return attrs.evolve(state, machine=state.machine.add(message.sample)), []
    if isinstance(message, Tick):
        live = tuple(
            (stage, attrs.evolve(item, now=message.now) if item.running else item)
            for stage, item in state.live
        )
        return _tick(attrs.evolve(state, now=message.now, live=live), message.now)
    if isinstance(message, SignalMsg):
        return _quit(state, signal=True)
    if isinstance(message, ConfigChanged):
        if message.problem is not None:
            return attrs.evolve(state, status=f"✗ overbrainer.toml: {message.problem}"), []
        return spawn(attrs.evolve(state, status="✓ config reloaded"), TaskSpec(TaskKind.LOAD))
    if isinstance(message, EditorDone):
        status = f"edited {message.path}" if message.error is None else message.error
        return spawn(attrs.evolve(state, status=status), TaskSpec(TaskKind.LOAD))
    raise AssertionError(message)


def _tick(state: State, now: float) -> Result:
    """While stages store: read the latest answer and count the records, each at its pace."""
    effects: list[Effect] = []
    reading = {t.spec.kind for t in state.tasks}
    answering = state.live_of(Stage.ANSWERS).running
    if answering and TaskKind.PREVIEW not in reading and now - state.preview_at >= PREVIEW_EVERY:
        state, more = spawn(attrs.evolve(state, preview_at=now), TaskSpec(TaskKind.PREVIEW))
        effects += more
    storing = any(live.running for _, live in state.live)
    if storing and TaskKind.COUNT not in reading and now - state.counted_at >= COUNT_EVERY:
        state, more = spawn(attrs.evolve(state, counted_at=now), TaskSpec(TaskKind.COUNT))
        effects += more
    return state, effects


def _report(state: State, message: TaskReport) -> State:
    report = message.report
    if isinstance(report, Line):
        lines = (*state.lines, report.text)[-KEPT_LINES:]
        return attrs.evolve(state, lines=lines, status=report.text)
    if isinstance(report, RunCreated):
        runs = (*state.task_runs, (message.task, report.run_id))
        status = f"run {report.run_id} created"
        state = set_followed(state, Followed(report.run_id))
        return attrs.evolve(state, status=status, task_runs=runs, select_run=report.run_id)
    return state


def _done(state: State, message: TaskDone) -> Result:
    task = next((t for t in state.tasks if t.id == message.task), None)
    new = without(state, message.task)
    compare = task is not None and task.spec.kind in COMPARE_KINDS
    export = task is not None and task.spec.kind is TaskKind.EXPORT
    if compare:
        new = attrs.evolve(new, compare_progress=None)
    if message.error is not None:
        prefix = "compare failed: " if compare else "" if message.interrupted else "error: "
        prefix = "export failed: " if export and not message.interrupted else prefix
        new = attrs.evolve(new, status=f"{prefix}{tui_words(message.error)}")
    elif compare:
        new = attrs.evolve(new, status=COMPARE_WRITTEN)
    live = tuple((s, attrs.evolve(item, running=False)) for s, item in new.live)
    if task is not None and task.spec.kind in (TaskKind.STAGE, TaskKind.AUTO):
        new = attrs.evolve(new, live=live)
        if message.error is None and not message.interrupted:
            # The results lines come before the task has ended: say when it has.
            new = attrs.evolve(new, status=f"{PIPELINE_DONE}{task.spec.label}")
    effects = exit_if_done(new)
    if effects or task is None or task.spec.kind in READ_KINDS or new.quitting:
        return new, effects
    return spawn(new, TaskSpec(TaskKind.LOAD))


def _quit(state: State, *, signal: bool) -> Result:
    """Stop every task (a signal abandons training ones), then exit once they have ended."""
    work = state.work()
    state = attrs.evolve(state, signalled=state.signalled or signal)
    if not work:
        return attrs.evolve(state, quitting=True, asking_quit=False), [Exit()]
    effects: list[Effect] = []
    for task in work:
        if task.cancelling and not signal:
            continue
        training = task.spec.kind in TRAINING_KINDS
        abandon = (signal and training) or task.spec.kind in JOB_KINDS
        effects.append(Abandon(task.id) if abandon else Cancel(task.id))
    tasks = tuple(attrs.evolve(t, cancelling=True) if t in work else t for t in state.tasks)
    status = "stopping the running work before quitting..."
    if state.comparing() is not None:
        status = "waiting for the compare to stop..."
    following = {t.id for t in work if t.spec.kind in TRAINING_KINDS}
    runs = dict.fromkeys(run for task, run in state.task_runs if task in following)
    notes = tuple(
        f"run {run} keeps training: follow it with `overbrainer train attach {run}`" for run in runs
    )
    return attrs.evolve(
        state, quitting=True, asking_quit=False, tasks=tasks, status=status, notes=notes
    ), effects


def _key(state: State, key: str) -> Result:
    if key == "ctrl c":
        return _quit(state, signal=True)
    if state.asking_quit:
        if key in ("y", "Y"):
            return _quit(state, signal=False)
        return attrs.evolve(state, asking_quit=False, status=""), []
    if state.quitting:
        return state, []
    if state.run_menu is not None:
        return run_menu_key(state, state.run_menu, key)
    if state.confirm:
        spec, detach = state.confirm_spec, state.confirm_detach
        state = attrs.evolve(state, confirm=(), confirm_spec=None, confirm_detach=None, status="")
        if spec is not None and spec.kind is TaskKind.AUTO and key == "d":
            spec = attrs.evolve(spec, train=False)  # the dataset alone: `run --no-train`
            key = "y"
        if key in ("y", "Y") and spec is not None:
            refused = refuse_busy(state) if spec.kind in DATA_KINDS else None
            if refused is not None:  # a stage was started while the question was up
                return refused, []
            return spawn(attrs.evolve(state, status=f"running {spec.label}"), spec)
        following = next((t for t in state.tasks if t.id == detach), None)
        if key == "d" and following is not None:
            return detach_task(state, following)
        return attrs.evolve(state, status=DISMISSED.get(spec.kind, "") if spec else ""), []
    if key == "q":
        if not state.work():
            return attrs.evolve(state, quitting=True), [Exit()]
        return attrs.evolve(state, asking_quit=True, status=QUIT_QUESTION), []
    if key in "123456" and len(key) == 1:
        return attrs.evolve(state, view=View(int(key))), []
    if key == "tab":
        return attrs.evolve(state, view=View(state.view % 6 + 1)), []
    if key == "shift tab":
        return attrs.evolve(state, view=View((state.view - 2) % 6 + 1)), []
    if key == "ctrl r":
        return spawn(state, TaskSpec(TaskKind.LOAD))
    handler = _VIEW_KEYS[state.view]
    return handler(state, key)


def _project_keys(state: State, key: str) -> Result:
    if key == "e":
        return state, [OpenEditor("overbrainer.toml")]
    return state, []


_VIEW_KEYS = {
    View.PROJECT: _project_keys,
    View.DATASET: dataset_keys,
    View.PIPELINE: pipeline_keys,
    View.TRAINING: training_keys,
    View.LOGS: logs_keys,
    View.COMPARE: compare_keys,
}
