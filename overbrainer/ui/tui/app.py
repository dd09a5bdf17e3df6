"""The TUI as a pure state machine: `update(state, message)` returns the new state and effects."""

from __future__ import annotations

import attrs

from overbrainer.events.frontend import Line, RunCreated
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
from overbrainer.ui.tui.compare_progress import CompareProgress
from overbrainer.ui.tui.compare_view import NO_COMPARE, screen_layout
from overbrainer.ui.tui.followed import Followed
from overbrainer.ui.tui.run_menu import Choice, menu_key
from overbrainer.ui.tui.state import (
    COMPARE_FILTERS,
    COMPARE_KINDS,
    JOB_KINDS,
    LEVELS,
    READ_KINDS,
    TRAINING_KINDS,
    Abandon,
    Cancel,
    ComparePrepared,
    ConfigChanged,
    EditorDone,
    Effect,
    Exit,
    ExportLogs,
    Key,
    Live,
    Loaded,
    Msg,
    Notice,
    OpenEditor,
    PodLogLines,
    Previewed,
    PushPlanned,
    Rekeyed,
    Resized,
    RunMenu,
    Sampled,
    SignalMsg,
    Spawn,
    State,
    Task,
    TaskDone,
    TaskEvent,
    TaskKind,
    TaskLagged,
    TaskReport,
    TaskSpec,
    Tick,
    TreeRow,
    View,
)

STAGES = (Stage.SUBTOPICS, Stage.QUESTIONS, Stage.ANSWERS, Stage.QUALITY, Stage.SPLIT)
"""The Pipeline view's stages: `run`'s, with `quality` (it runs only with a `[quality] judge`)."""
KEPT_LINES = 200
LOG_PAGE = 10
DETAIL_PAGE = 10
"""Lines PgUp/PgDn scroll the Compare view's detail pane by (never past its last page)."""
PREVIEW_EVERY = 1.0
"""Seconds between two reads of the latest answer while answers are being stored."""
FOLLOW_AFRESH = frozenset({TaskKind.ATTACH, TaskKind.STOP})
"""Tasks that follow an existing run: what was seen of it starts again (a resume's run is new)."""

COMPARE_WRITTEN = "compare written: see the Compare view"
PREPARING = "planning the compare (and pricing its pod)..."
PREPARE_BUSY = "busy: a compare is being planned"
PREPARED_LATE = "compare not asked: another question was open (C plans it again)"
CANCEL_LINES = (
    "cancel run {run}?",
    "its job is stopped and the run is recorded cancelled",
    "(what `overbrainer train cancel {run}` does)",
)
DISMISSED = {
    TaskKind.PUSH: "not pushed",
    TaskKind.CANCEL: "not cancelled",
    TaskKind.DELETE: "not deleted",
    TaskKind.COMPARE: "not compared",
    TaskKind.REJUDGE: "not rejudged",
}
REJUDGE_ASK = "y rejudges, n or Esc does not"
DELETE_LINES = {
    "subtopics": "its questions and their answers go too; it is rejected: never generated again",
    "questions": "its answer goes too; it is rejected: never generated again",
    "answers": "the question stays: `overbrainer answers` asks it again",
}
POD_LOG_LINES = 20_000
"""Lines of a pod log the Logs view keeps (the newest)."""
NO_RUN_LOG = "no run yet: a pod log is a training run's (`s` shows it once there is one)"
APP_LOG = "the app's own log"
POD_HINT = "pods: `overbrainer pod ls`, `overbrainer pod rm ID`"
QUIT_QUESTION = "work is running: quit and stop it? y/n (followed runs keep training)"
NO_TRAINING = "no [training] section in overbrainer.toml: add one to train (see docs/training.md)"

TOPIC_EDIT = "a topic is edited in overbrainer.toml (Project view, e)"

Result = tuple[State, list[Effect]]


def start(state: State, *, auto: bool = False) -> Result:
    """The first effects: read the project, and with `auto` run `overbrainer run` at once."""
    state, effects = _spawn(state, TaskSpec(TaskKind.LOAD))
    if not auto:
        return state, effects
    state, more = _spawn(
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
        state = _event(state, message)
        loading = any(t.spec.kind is TaskKind.LOAD for t in state.tasks)
        if isinstance(message.event, JobStatusChanged) and not loading:
            return _spawn(state, TaskSpec(TaskKind.LOAD))  # the run's new state, listed
        return state, []
    if isinstance(message, TaskLagged):
        return attrs.evolve(state, status=f"{message.n} progress events skipped"), []
    if isinstance(message, TaskReport):
        state = _report(state, message)
        if isinstance(message.report, RunCreated):  # list the new run at once
            return _spawn(state, TaskSpec(TaskKind.LOAD))
        return state, []
    if isinstance(message, TaskDone):
        return _done(state, message)
    if isinstance(message, Rekeyed):
        return _rekeyed(state, message), []
    if isinstance(message, Loaded):
        kept = _without(state, message.task)
        runs = len(message.snapshot.runs)
        return attrs.evolve(
            kept,
            snapshot=message.snapshot,
            run_index=min(kept.run_index, max(runs - 1, 0)),
            tree_index=_same_row(kept.snapshot.tree, kept.tree_index, message.snapshot.tree),
            compare_index=min(kept.compare_index, max(len(message.snapshot.compares) - 1, 0)),
        ), _exit_if_done(kept)
    if isinstance(message, PushPlanned):
        kept = _without(state, message.task)
        if message.error is not None:
            return attrs.evolve(kept, status=f"push refused: {message.error}"), []
        spec = TaskSpec(TaskKind.PUSH, run_id=message.run_id)
        status = f"push run {message.run_id}? y pushes, any other key does not"
        return attrs.evolve(kept, confirm=message.lines, confirm_spec=spec, status=status), []
    if isinstance(message, ComparePrepared):
        kept = _without(state, message.task)
        if message.error is not None:
            return attrs.evolve(kept, status=message.error), _exit_if_done(kept)
        if kept.quitting:
            return kept, _exit_if_done(kept)
        if kept.confirm:  # another question is up: never replace it unanswered
            return attrs.evolve(kept, status=PREPARED_LATE), []
        spec = TaskSpec(TaskKind.COMPARE, run_id=message.run_id)
        status = f"compare run {message.run_id}? y compares, n or Esc does not"
        return attrs.evolve(kept, confirm=message.lines, confirm_spec=spec, status=status), []
    if isinstance(message, PodLogLines):
        return _pod_log_lines(state, message), []
    if isinstance(message, Previewed):
        kept = _without(state, message.task)
        return attrs.evolve(kept, preview=message.text or kept.preview), _exit_if_done(kept)
    if isinstance(message, Sampled):
        return attrs.evolve(state, machine=state.machine.add(message.sample)), []
    if isinstance(message, Tick):
        live = tuple(
            (stage, attrs.evolve(item, now=message.now) if item.running else item)
            for stage, item in state.live
        )
        state = attrs.evolve(state, now=message.now, live=live)
        reading = any(t.spec.kind is TaskKind.PREVIEW for t in state.tasks)
        answering = state.live_of(Stage.ANSWERS).running
        if answering and not reading and message.now - state.preview_at >= PREVIEW_EVERY:
            state = attrs.evolve(state, preview_at=message.now)
            return _spawn(state, TaskSpec(TaskKind.PREVIEW))
        return state, []
    if isinstance(message, SignalMsg):
        return _quit(state, signal=True)
    if isinstance(message, ConfigChanged):
        if message.problem is not None:
            return attrs.evolve(state, status=f"✗ overbrainer.toml: {message.problem}"), []
        return _spawn(attrs.evolve(state, status="✓ config reloaded"), TaskSpec(TaskKind.LOAD))
    if isinstance(message, EditorDone):
        status = f"edited {message.path}" if message.error is None else message.error
        return _spawn(attrs.evolve(state, status=status), TaskSpec(TaskKind.LOAD))
    raise AssertionError(message)


def _same_row(old: tuple[TreeRow, ...], index: int, new: tuple[TreeRow, ...]) -> int:
    """The Dataset selection in a new tree: the same record where it still is (an edited one
    moves to the end of its file), else the same place."""
    kept = min(index, max(len(new) - 1, 0))
    if not old or index >= len(old):
        return kept
    row = old[index]
    key = (row.file, row.id or row.text)
    return next((at for at, r in enumerate(new) if (r.file, r.id or r.text) == key), kept)


def _rekeyed(state: State, message: Rekeyed) -> State:
    """The tree with the record's new ID, so that the next read keeps it selected."""
    tree = tuple(
        attrs.evolve(row, id=message.new_id)
        if (row.file, row.id) == (message.file, message.old_id)
        else row
        for row in state.snapshot.tree
    )
    return attrs.evolve(state, snapshot=attrs.evolve(state.snapshot, tree=tree))


def _spawn(state: State, spec: TaskSpec) -> Result:
    task = Task(state.next_task, spec)
    new = attrs.evolve(state, tasks=(*state.tasks, task), next_task=state.next_task + 1)
    if spec.kind in COMPARE_KINDS:
        progress = CompareProgress.starting(spec.kind is TaskKind.REJUDGE, state.now)
        new = attrs.evolve(new, compare_progress=progress)
    if spec.run_id is not None and spec.kind in TRAINING_KINDS:
        new = attrs.evolve(new, task_runs=(*new.task_runs, (task.id, spec.run_id)))
    if spec.run_id is not None and spec.kind in FOLLOW_AFRESH and not spec.followed:
        new = _set_followed(new, Followed(spec.run_id))  # its job's lines are read from the start
    return new, [Spawn(task.id, spec)]


def _without(state: State, task_id: int) -> State:
    return attrs.evolve(state, tasks=tuple(t for t in state.tasks if t.id != task_id))


def _exit_if_done(state: State) -> list[Effect]:
    return [Exit()] if state.quitting and not state.work() else []


def _set_live(state: State, stage: Stage, live: Live) -> State:
    others = tuple((s, item) for s, item in state.live if s is not stage)
    return attrs.evolve(state, live=(*others, (stage, live)))


def _event(state: State, message: TaskEvent) -> State:
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
        return _set_live(
            state,
            event.stage,
            attrs.evolve(
                live,
                done=live.done + 1,
                requests=live.requests + (usage is not None),
                cost=live.cost + (event.cost or 0.0),
                tokens_in=live.tokens_in + (usage.input_tokens if usage else 0),
                tokens_out=live.tokens_out + (usage.output_tokens if usage else 0),
                now=now,
            ),
        )
    if isinstance(event, ItemFailed):
        live = state.live_of(event.stage)
        failed = live.failed + (not event.retryable)
        live = attrs.evolve(live, failed=failed, requests=live.requests + 1, now=now)
        return _set_live(state, event.stage, live)
    if isinstance(event, StageFinished):
        live = state.live_of(event.stage)
        stats = event.stats
        return _set_live(
            state,
            event.stage,
            attrs.evolve(
                live, running=False, now=now, cost=stats.cost if stats.cost else live.cost
            ),
        )
    if isinstance(event, System | Metric):
        run_id = state.task_run(message.task)
        followed = state.followed_of(run_id) if run_id is not None else None
        if followed is not None:
            return _set_followed(state, followed.take(event, now))
    return state


def _set_followed(state: State, followed: Followed) -> State:
    others = tuple(f for f in state.followed if f.run_id != followed.run_id)
    return attrs.evolve(state, followed=(*others, followed))


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


def _report(state: State, message: TaskReport) -> State:
    report = message.report
    if isinstance(report, Line):
        lines = (*state.lines, report.text)[-KEPT_LINES:]
        return attrs.evolve(state, lines=lines, status=report.text)
    if isinstance(report, RunCreated):
        runs = (*state.task_runs, (message.task, report.run_id))
        status = f"run {report.run_id} created"
        state = _set_followed(state, Followed(report.run_id))
        return attrs.evolve(state, status=status, task_runs=runs)
    return state


def _done(state: State, message: TaskDone) -> Result:
    task = next((t for t in state.tasks if t.id == message.task), None)
    new = _without(state, message.task)
    compare = task is not None and task.spec.kind in COMPARE_KINDS
    export = task is not None and task.spec.kind is TaskKind.EXPORT
    if compare:
        new = attrs.evolve(new, compare_progress=None)
    if message.error is not None:
        prefix = "compare failed: " if compare else "" if message.interrupted else "error: "
        prefix = "export failed: " if export and not message.interrupted else prefix
        new = attrs.evolve(new, status=f"{prefix}{message.error}")
    elif compare:
        new = attrs.evolve(new, status=COMPARE_WRITTEN)
    live = tuple((s, attrs.evolve(item, running=False)) for s, item in new.live)
    if task is not None and task.spec.kind in (TaskKind.STAGE, TaskKind.AUTO):
        new = attrs.evolve(new, live=live)
    effects = _exit_if_done(new)
    if effects or task is None or task.spec.kind in READ_KINDS or new.quitting:
        return new, effects
    return _spawn(new, TaskSpec(TaskKind.LOAD))


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
        return _run_menu_key(state, state.run_menu, key)
    if state.confirm:
        spec, detach = state.confirm_spec, state.confirm_detach
        state = attrs.evolve(state, confirm=(), confirm_spec=None, confirm_detach=None, status="")
        if key in ("y", "Y") and spec is not None:
            return _spawn(attrs.evolve(state, status=f"running {spec.label}"), spec)
        following = next((t for t in state.tasks if t.id == detach), None)
        if key == "d" and following is not None:
            return _detach(state, following)
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
        return _spawn(state, TaskSpec(TaskKind.LOAD))
    handler = _VIEW_KEYS[state.view]
    return handler(state, key)


def _move(index: int, key: str, length: int) -> int | None:
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


def _refuse_busy(state: State) -> State | None:
    """The state with a refusal shown when the data lock is taken, else None."""
    busy = state.busy()
    if busy is None:
        return None
    return attrs.evolve(state, status=f"busy: {busy.spec.label} is running (c cancels it)")


def _cancel_data(state: State) -> Result:
    busy = state.busy()
    if busy is None or busy.spec.kind in TRAINING_KINDS:
        return attrs.evolve(state, status="no stage is running"), []
    tasks = tuple(attrs.evolve(t, cancelling=True) if t == busy else t for t in state.tasks)
    status = f"stopping {busy.spec.label}..."
    return attrs.evolve(state, tasks=tasks, status=status), [Cancel(busy.id)]


def _pipeline_keys(state: State, key: str) -> Result:
    moved = _move(state.stage_index, key, len(STAGES))
    if moved is not None:
        return attrs.evolve(state, stage_index=moved), []
    if key in ("r", "enter"):
        refused = _refuse_busy(state)
        if refused is not None:
            return refused, []
        menu = RunMenu(STAGES[state.stage_index])
        if key == "enter":  # at once, on every topic, without --force
            return _run_stage(state, menu.spec())
        status = f"run {menu.spec().label}? r or Enter runs it, Esc or n does not"
        return attrs.evolve(state, run_menu=menu, status=status), []
    if key == "A":
        refused = _refuse_busy(state)
        if refused is not None:
            return refused, []
        spec = TaskSpec(TaskKind.AUTO)
        return _spawn(attrs.evolve(state, status="auto: running overbrainer run"), spec)
    if key == "c":
        return _cancel_data(state)
    return state, []


def _run_stage(state: State, spec: TaskSpec) -> Result:
    refused = _refuse_busy(state)
    if refused is not None:
        return refused, []
    return _spawn(attrs.evolve(state, status=f"running {spec.label}"), spec)


def _run_menu_key(state: State, menu: RunMenu, key: str) -> Result:
    menu, choice, status = menu_key(menu, key, state.snapshot.topics)
    if choice is Choice.RUN:
        return _run_stage(attrs.evolve(state, run_menu=None), menu.spec())
    if choice is Choice.CLOSE:
        return attrs.evolve(state, run_menu=None, status=status), []
    status = status or f"run {menu.spec().label}? r or Enter runs it, Esc or n does not"
    return attrs.evolve(state, run_menu=menu, status=status), []


def _selected_run(state: State) -> str | None:
    runs = state.visible_runs()
    if not runs:
        return None
    return runs[min(state.run_index, len(runs) - 1)].id


def _training_keys(state: State, key: str) -> Result:
    moved = _move(state.run_index, key, len(state.visible_runs()))
    if moved is not None:
        return attrs.evolve(state, run_index=moved, run_picked=True), []
    if key == "x":
        return attrs.evolve(state, hide_failed=not state.hide_failed, run_index=0), []
    if key == "h":
        run_id = _selected_run(state)
        if run_id is None:
            return attrs.evolve(state, status="no run selected"), []
        if any(t.spec.kind in (TaskKind.PUSH, TaskKind.PUSH_PLAN) for t in state.tasks):
            return attrs.evolve(state, status="busy: a push is running"), []
        return _spawn(state, TaskSpec(TaskKind.PUSH_PLAN, run_id=run_id))
    if key == "C":
        run_id = _selected_run(state)
        if run_id is None:
            return attrs.evolve(state, status="no run selected"), []
        return _start_job(state, TaskSpec(TaskKind.PREPARE_COMPARE, run_id=run_id))
    if key == "E":
        run_id = _selected_run(state)
        if run_id is None:
            return attrs.evolve(state, status="no run selected"), []
        return _start_job(state, TaskSpec(TaskKind.EXPORT, run_id=run_id))
    if key == "p":
        return _dismiss_pod(state)
    if key == "t":
        if not state.snapshot.training:
            return attrs.evolve(state, status=NO_TRAINING), []
        refused = _refuse_busy(state)
        if refused is not None:
            return refused, []
        return _spawn(state, TaskSpec(TaskKind.TRAIN))
    run_id = _selected_run(state)
    exporting = state.exporting()
    if key == "c" and exporting is not None:
        return _abandon(state, exporting)
    following = next((t for t in state.tasks if t.spec.kind in TRAINING_KINDS), None)
    if key == "c":
        if run_id is None or (following is not None and not _bound(state, following)):
            if following is None:
                return attrs.evolve(state, status="no run selected"), []
            return _detach(state, following)  # a start with no run yet: detach (or defer it)
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
        refused = _refuse_busy(state)
        if refused is not None:
            return refused, []
    followed = kind is TaskKind.STOP and state.following(run_id) is not None
    spec = TaskSpec(kind, run_id=run_id, followed=followed)
    return _spawn(attrs.evolve(state, status=f"running {spec.label}"), spec)


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


def _detach(state: State, task: Task) -> Result:
    """Stop following `task`'s run: the run keeps going."""
    tasks = tuple(attrs.evolve(t, cancelling=True) if t == task else t for t in state.tasks)
    status = f"detaching from {task.spec.label}: the run keeps going"
    return attrs.evolve(state, tasks=tasks, status=status), [Cancel(task.id)]


def _abandon(state: State, task: Task) -> Result:
    """Stop a compare or an export: its job is cancelled (a pod it started is deleted)."""
    tasks = tuple(attrs.evolve(t, cancelling=True) if t == task else t for t in state.tasks)
    status = f"stopping {task.spec.label}..."
    return attrs.evolve(state, tasks=tasks, status=status), [Abandon(task.id)]


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


def _pod_log_run(state: State) -> str | None:
    """The run whose pod log `s` shows: the one selected in the Training view, else the newest
    with a `.pod/` folder, else the selected one (its `no pod log` line)."""
    with_log = [run for run in state.snapshot.runs if run.pod_log]  # listed oldest first
    if with_log and not state.run_picked:
        return with_log[-1].id
    return _selected_run(state)


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
    return _spawn(attrs.evolve(state, status=f"reading the pod log of run {run_id}..."), spec)


def _pod_log_lines(state: State, message: PodLogLines) -> State:
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


def _logs_keys(state: State, key: str) -> Result:
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


def _project_keys(state: State, key: str) -> Result:
    if key == "e":
        return state, [OpenEditor("overbrainer.toml")]
    return state, []


def _dataset_keys(state: State, key: str) -> Result:
    tree = state.snapshot.tree
    moved = _move(state.tree_index, key, len(tree))
    if moved is not None:
        return attrs.evolve(state, tree_index=moved), []
    if key == "page down":
        return attrs.evolve(state, tree_index=min(state.tree_index + 10, max(len(tree) - 1, 0))), []
    if key == "page up":
        return attrs.evolve(state, tree_index=max(state.tree_index - 10, 0)), []
    if key in ("e", "d") and tree:
        refused = _refuse_busy(state)
        if refused is not None:
            return refused, []
        row = tree[min(state.tree_index, len(tree) - 1)]
        if not row.file:
            return attrs.evolve(state, status=TOPIC_EDIT), []
        noun = row.file.removesuffix("s")
        if key == "e":
            spec = TaskSpec(TaskKind.EDIT, record_file=row.file, record_id=row.id)
            return _spawn(attrs.evolve(state, status=f"editing {noun} {row.id}"), spec)
        spec = TaskSpec(TaskKind.DELETE, record_file=row.file, record_id=row.id)
        lines = (f"delete {noun} {row.id}?", row.text[:70], DELETE_LINES[row.file])
        status = f"delete {noun} {row.id}? y deletes it, any other key does not"
        return attrs.evolve(state, confirm=lines, confirm_spec=spec, status=status), []
    return state, []


def _job_refused(state: State) -> State | None:
    """The state saying why no compare or export may start now; None when one may."""
    if state.preparing() is not None:
        return attrs.evolve(state, status=PREPARE_BUSY)
    running = state.comparing() or state.exporting()
    if running is not None:
        return attrs.evolve(state, status=f"busy: {running.spec.label} is running (c cancels it)")
    return _refuse_busy(state)


def _start_job(state: State, spec: TaskSpec) -> Result:
    """Spawn a compare (its plan first, for the confirmation) or an export: one at a time,
    refused while the data lock is taken."""
    refused = _job_refused(state)
    if refused is not None:
        return refused, []
    if spec.kind is TaskKind.PREPARE_COMPARE:
        return _spawn(attrs.evolve(state, status=PREPARING), spec)
    return _spawn(attrs.evolve(state, status=f"running {spec.label}"), spec)


def _compare_keys(state: State, key: str) -> Result:
    if key in ("page down", "page up", "[", "]"):
        layout = screen_layout(state)
        offset = layout.clamp(state.detail_offset)
        if key in ("page down", "page up"):
            step = DETAIL_PAGE if key == "page down" else -DETAIL_PAGE
            offset = layout.clamp(offset + step)
        else:
            offset = layout.next_part(offset) if key == "]" else layout.previous_part(offset)
        return attrs.evolve(state, detail_offset=offset), []
    if key in ("h", "left"):
        return attrs.evolve(state, compare_focus=0), []
    if key in ("l", "right"):
        return attrs.evolve(state, compare_focus=1), []
    if key in ("up", "down", "k", "j", "home", "end"):
        if state.compare_focus == 0:
            moved = _move(state.compare_index, key, len(state.snapshot.compares))
            return attrs.evolve(state, compare_index=moved or 0, item_index=0, detail_offset=0), []
        moved = _move(state.item_index, key, len(state.compare_items()))
        return attrs.evolve(state, item_index=moved or 0, detail_offset=0), []
    if key == "f":
        index = (state.compare_filter + 1) % len(COMPARE_FILTERS)
        status = f"showing {COMPARE_FILTERS[index][0]}"
        return attrs.evolve(
            state, compare_filter=index, item_index=0, detail_offset=0, status=status
        ), []
    if key == "C":
        return _start_job(state, TaskSpec(TaskKind.PREPARE_COMPARE))
    if key == "J":
        row = state.selected_compare()
        if row is None:
            return attrs.evolve(state, status=NO_COMPARE), []
        refused = _job_refused(state)
        if refused is not None:
            return refused, []
        # The judge is paid: as for `C`, nothing is asked of it before `y`.
        lines = (
            f"rejudge {row.id} of run {row.run}?",
            f"the judge is asked about each of its {row.questions} questions that this judge "
            "and prompt have no verdict on yet",
            REJUDGE_ASK,
        )
        spec = TaskSpec(TaskKind.REJUDGE, run_id=row.run, compare_id=row.id)
        status = f"rejudge {row.id}? {REJUDGE_ASK}"
        return attrs.evolve(state, confirm=lines, confirm_spec=spec, status=status), []
    if key == "c":
        running = state.comparing()
        if running is None:
            return attrs.evolve(state, status="no compare is running"), []
        return _abandon(state, running)
    return state, []


_VIEW_KEYS = {
    View.PROJECT: _project_keys,
    View.DATASET: _dataset_keys,
    View.PIPELINE: _pipeline_keys,
    View.TRAINING: _training_keys,
    View.LOGS: _logs_keys,
    View.COMPARE: _compare_keys,
}
