"""The TUI's state machine, pure: `A`'s question, the Pipeline view's counts, the cursor on a
new run, and the Logs view's wrapping."""

from __future__ import annotations

import logging

from overbrainer.events.frontend import RunCreated
from overbrainer.events.types import ItemDone, Stage, StageFinished, StageStarted, StageStats
from overbrainer.model.usage import Usage
from overbrainer.training import RUN_NO_TRAIN_HINT
from overbrainer.ui.logs import LogBuffer, LogLine
from overbrainer.ui.tui import render
from overbrainer.ui.tui.auto_plan import TUI_NO_TRAIN_HINT
from overbrainer.ui.tui.effects import Spawn
from overbrainer.ui.tui.messages import (
    AutoPrepared,
    Counted,
    Key,
    Loaded,
    TaskDone,
    TaskEvent,
    TaskReport,
    Tick,
)
from overbrainer.ui.tui.snapshot import RunRow, Snapshot
from overbrainer.ui.tui.state import State, View
from overbrainer.ui.tui.task_spec import TaskKind, TaskSpec
from tests.tui_app_support import feed, keys


def asked(training: bool) -> State:
    """The Pipeline view with `A`'s question up (task 1 estimated the run)."""
    state, effects = keys(State(snapshot=Snapshot(training=training)), "A")
    assert effects == [Spawn(1, TaskSpec(TaskKind.ESTIMATE_RUN))]
    state, effects = keys(state, "A")
    assert effects == []  # one estimate at a time
    state, effects = feed(state, AutoPrepared(1, ("estimate: total $0.10-$0.90",)))
    assert effects == [] and state.confirm[1] == "estimate: total $0.10-$0.90"
    return state


def test_a_asks_and_only_y_or_d_start_the_run() -> None:
    state, effects = keys(asked(training=False), "x")
    assert (effects, state.status, state.confirm) == ([], "not run", ())
    state, effects = keys(asked(training=True), "d")
    assert effects == [Spawn(2, TaskSpec(TaskKind.AUTO, train=False))]
    assert state.status == "running overbrainer run --no-train"
    state, effects = keys(asked(training=True), "y")
    assert effects == [Spawn(2, TaskSpec(TaskKind.AUTO))]
    state, effects = feed(state, TaskDone(2, f"target `local` cannot train: x{RUN_NO_TRAIN_HINT}"))
    assert state.status == f"error: target `local` cannot train: x{TUI_NO_TRAIN_HINT}"


def test_y_is_refused_when_a_stage_took_the_data_while_the_run_was_estimated() -> None:
    state, effects = keys(State(), "A")
    assert effects == [Spawn(1, TaskSpec(TaskKind.ESTIMATE_RUN))]
    state, effects = keys(state, "enter")  # estimating holds no data: a stage may start
    assert effects == [Spawn(2, TaskSpec(TaskKind.STAGE, Stage.SUBTOPICS))]
    state, effects = feed(state, AutoPrepared(1, ()), Key("y"))
    assert effects == [] and state.status.startswith("busy: overbrainer subtopics is running")


def test_skipped_items_are_not_done_and_the_totals_come_at_the_end() -> None:
    state, _ = feed(
        State(),
        TaskEvent(1, StageStarted(Stage.QUALITY, 4), 1.0),
        TaskEvent(1, ItemDone(Stage.QUALITY, "a"), 1.1),
        TaskEvent(1, ItemDone(Stage.QUALITY, "b", Usage(10, 2), 0.5), 1.2),
    )
    live = state.live_of(Stage.QUALITY)
    assert (live.done, live.skipped, live.requests, live.tokens_in) == (1, 1, 1, 10)
    stats = StageStats(done=1, skipped=1, failed=2, usage=Usage(300, 60), cost=1.7)
    state, _ = feed(state, TaskEvent(1, StageFinished(Stage.QUALITY, stats), 2.0))
    live = state.live_of(Stage.QUALITY)
    # Unscored replies were paid too: the stage's totals, not only the stored item's.
    assert (live.tokens_in, live.tokens_out, live.cost, live.running) == (300, 60, 1.7, False)


def test_records_are_counted_once_a_second_while_a_stage_runs() -> None:
    state, effects = feed(State(), Tick(5.0))
    assert effects == []  # nothing runs: nothing to count
    state, _ = feed(state, TaskEvent(9, StageStarted(Stage.QUESTIONS, 3), 5.0))
    state, effects = feed(state, Tick(5.25))
    assert effects == [Spawn(1, TaskSpec(TaskKind.COUNT))]
    state, effects = feed(state, Tick(6.5))
    assert effects == []  # one count at a time
    state, effects = feed(state, Counted(1, (("questions", 3),)))
    assert state.snapshot.count("questions") == 3
    state, effects = feed(state, Tick(6.0))
    assert effects == []  # less than a second since the last count
    state, effects = feed(state, Tick(6.3))
    assert effects == [Spawn(2, TaskSpec(TaskKind.COUNT))]


def row(run_id: str) -> RunRow:
    return RunRow(run_id, "running", "local", "2026-12-07T00:00:00Z")


def test_the_cursor_goes_to_the_run_this_session_created() -> None:
    old = Snapshot(runs=(row("p_1"), row("p_2")), training=True)
    state, _ = feed(State(view=View.TRAINING), Loaded(1, old))
    state, effects = keys(state, "t")
    assert effects == [Spawn(1, TaskSpec(TaskKind.TRAIN))]
    state, _ = feed(state, TaskReport(1, RunCreated("p_3")), Loaded(2, old))
    assert state.run_index == 0  # not listed yet: the cursor stays
    new = Snapshot(runs=(row("p_1"), row("p_2"), row("p_3")), training=True)
    state, _ = feed(state, Loaded(3, new))
    assert (state.run_index, state.select_run) == (2, None)
    state, _ = feed(state, Key("up"), Loaded(4, new))
    assert state.run_index == 1  # moved once: the user's moves stand


def test_a_log_line_longer_than_the_screen_is_wrapped_under_its_message() -> None:
    logs = LogBuffer()
    logs.push(LogLine(level=logging.INFO, target="t", time=0.0, message="word " * 30))
    lines = render.body(State(view=View.LOGS), logs, 80, 24)
    texts = ["".join(p if isinstance(p, str) else p[1] for p in line) for line in lines]
    assert len(texts) == 4 and all(
        t.startswith(" " * render.LOG_INDENT + "word") for t in texts[2:]
    )
    assert "".join(texts[1:]).split().count("word") == 30
