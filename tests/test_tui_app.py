"""The TUI's state machine, pure: messages in, state and effects out."""

from __future__ import annotations

import logging
import signal
from pathlib import Path

import attrs

from overbrainer.events.frontend import Line, RunCreated
from overbrainer.events.types import (
    ItemDone,
    ItemFailed,
    JobStatusChanged,
    MarkEvent,
    Metric,
    RateLimitWait,
    Stage,
    StageFinished,
    StageStarted,
    StageStats,
)
from overbrainer.model.job_status import Exited, Running
from overbrainer.model.train_metric import JobStage, StageMark, TrainMetric
from overbrainer.model.usage import Usage
from overbrainer.project.directory import open_project
from overbrainer.ui.logs import LogBuffer
from overbrainer.ui.tui import actions, app, dataset_keys, logs_keys, render, training_keys
from overbrainer.ui.tui.effects import Abandon, Cancel, Exit, ExportLogs, OpenEditor, Spawn
from overbrainer.ui.tui.live import ROLES
from overbrainer.ui.tui.load import latest_answer
from overbrainer.ui.tui.messages import (
    AutoPrepared,
    ComparePrepared,
    ConfigChanged,
    Key,
    Loaded,
    Previewed,
    Rekeyed,
    SignalMsg,
    TaskDone,
    TaskEvent,
    TaskReport,
    Tick,
)
from overbrainer.ui.tui.snapshot import RunRow, Snapshot, TreeRow
from overbrainer.ui.tui.state import State, View
from overbrainer.ui.tui.task_spec import TaskKind, TaskSpec
from tests.pipeline_support import make_project, read_examples, write_answered
from tests.tui_app_support import feed, keys


def loaded(state: State, snapshot: Snapshot) -> State:
    """`state` after its first LOAD task delivered `snapshot`."""
    state, effects = app.start(state)
    assert effects == [Spawn(1, TaskSpec(TaskKind.LOAD))]
    state, effects = app.update(state, Loaded(1, snapshot))
    assert effects == []
    assert state.tasks == ()
    return state


def test_start_reads_the_project_and_the_snapshot_replaces_the_old_one() -> None:
    snapshot = Snapshot(name="demo", counts=(("answers", 3),))
    state = loaded(State(), snapshot)
    assert state.snapshot.count("answers") == 3
    assert state.snapshot.count("train") == 0


def test_number_keys_tab_and_shift_tab_switch_views() -> None:
    state = State()
    for number, view in zip("123456", View, strict=True):
        state, effects = keys(state, number)
        assert (state.view, effects) == (view, [])
    state, _ = keys(state, "tab")
    assert state.view is View.PROJECT
    state, _ = keys(state, "shift tab")
    assert state.view is View.COMPARE
    state, _ = keys(state, "shift tab", "shift tab")
    assert state.view is View.TRAINING


def test_r_runs_the_selected_stage_and_a_second_is_refused_while_it_runs() -> None:
    state = loaded(State(view=View.PIPELINE), Snapshot())
    state, effects = keys(state, "down", "down", "enter")
    assert effects == [Spawn(2, TaskSpec(TaskKind.STAGE, stage=Stage.ANSWERS))]
    state, effects = keys(state, "up", "enter")
    assert effects == []
    assert state.status == "busy: overbrainer answers is running (c cancels it)"
    state, effects = keys(state, "A")
    assert effects == []
    state, effects = keys(state, "c")
    assert effects == [Cancel(2)]
    assert state.status == "stopping overbrainer answers..."
    state, effects = feed(state, TaskDone(2, "interrupted: resumes", interrupted=True))
    assert state.status == "interrupted: resumes"
    assert effects == [Spawn(3, TaskSpec(TaskKind.LOAD))]  # counts are read again


def test_auto_mode_runs_the_whole_run_and_c_without_a_stage_says_so() -> None:
    state = loaded(State(view=View.PIPELINE), Snapshot())
    state, effects = keys(state, "c")
    assert (effects, state.status) == ([], "no stage is running")
    state, effects = keys(state, "A")  # estimated first, then asked
    assert effects == [Spawn(2, TaskSpec(TaskKind.ESTIMATE_RUN))]
    state, effects = feed(state, AutoPrepared(2, ("estimate: total $0.10-$0.90",)), Key("y"))
    assert effects == [Spawn(3, TaskSpec(TaskKind.AUTO))]
    assert state.busy() is not None
    state, _ = feed(state, TaskReport(3, Line("split: 7 train, 1 eval, 0 excluded, 0 orphaned")))
    assert state.lines == ("split: 7 train, 1 eval, 0 excluded, 0 orphaned",)
    state, effects = feed(state, TaskDone(3, "items failed"))
    assert state.status == "error: items failed"
    assert state.busy() is None


def test_events_give_counts_tokens_spend_and_rate() -> None:
    state = State()
    state, _ = feed(
        state,
        TaskEvent(1, StageStarted(Stage.ANSWERS, 10), 100.0),
        TaskEvent(1, ItemDone(Stage.ANSWERS, "a", Usage(100, 50), 0.2), 101.0),
        TaskEvent(1, ItemDone(Stage.ANSWERS, "b", Usage(10, 5), 0.1), 101.5),
        TaskEvent(1, ItemFailed(Stage.ANSWERS, "c", "boom", retryable=True), 101.6),
        TaskEvent(1, ItemFailed(Stage.ANSWERS, "d", "boom"), 101.7),
        Tick(102.0),
    )
    live = state.live_of(Stage.ANSWERS)
    assert (live.total, live.done, live.failed) == (10, 2, 1)
    assert (live.tokens_in, live.tokens_out) == (110, 55)
    assert abs(live.cost - 0.3) < 1e-9
    assert live.rate == 1.0  # 2 answers in 2 s
    assert state.live_of(Stage.SUBTOPICS).done == 0


def test_a_pause_for_the_rate_limit_is_on_the_status_line() -> None:
    wait = RateLimitWait("litellm/m", 41.0, "window", "requests", 0, 30)
    state, _ = feed(State(), TaskEvent(1, wait, 100.0))
    assert state.status == (
        "litellm/m: waiting for the provider's rate limit: 0 of 30 requests left, resuming in 41 s"
    )


def test_requests_tokens_and_spend_per_role_over_the_stages_of_each() -> None:
    state = State()
    state, _ = feed(
        state,
        TaskEvent(1, StageStarted(Stage.SUBTOPICS, 2), 10.0),
        TaskEvent(1, ItemDone(Stage.SUBTOPICS, "t1", Usage(100, 100), 0.01), 11.0),
        TaskEvent(1, ItemDone(Stage.SUBTOPICS, "t2"), 11.0),  # skipped: no request
        TaskEvent(1, StageFinished(Stage.SUBTOPICS, StageStats(done=2)), 12.0),
        TaskEvent(1, StageStarted(Stage.QUESTIONS, 2), 20.0),
        TaskEvent(1, ItemFailed(Stage.QUESTIONS, "s1", "429", retryable=True), 21.0),
        TaskEvent(1, ItemDone(Stage.QUESTIONS, "s1", Usage(200, 400), 0.02), 22.0),
        TaskEvent(1, StageFinished(Stage.QUESTIONS, StageStats(done=1)), 22.0),
        TaskEvent(1, StageStarted(Stage.ANSWERS, 5), 30.0),
        TaskEvent(1, ItemDone(Stage.ANSWERS, "a", Usage(50, 950), 0.5), 31.0),
        Tick(34.0),
    )
    generator = state.role_live(dict(ROLES)["generator"])
    assert (generator.requests, generator.tokens_in + generator.tokens_out) == (3, 800)
    assert abs(generator.cost - 0.03) < 1e-9
    assert generator.request_rate == 3 / 4  # 2 s of subtopics, 2 s of questions
    assert generator.token_rate == 800 / 4
    parent = state.role_live(dict(ROLES)["parent"])
    assert (parent.requests, parent.request_rate, parent.token_rate) == (1, 0.25, 250.0)
    assert (parent.running and not generator.running) or generator.running
    screen = "\n".join(
        "".join(p if isinstance(p, str) else p[1] for p in line)
        for line in render.body(state, LogBuffer(), 100, 30)
    )
    assert "role        requests     req/s    tok/s      spend" in screen
    assert "  generator        3  45.0/min    200/s    $0.0300" in screen
    assert "… parent           1  15.0/min    250/s    $0.5000" in screen
    assert state.role_live(()).request_rate is None


def test_q_quits_at_once_without_work() -> None:
    state, effects = keys(State(), "q")
    assert effects == [Exit()]
    assert state.quitting


def test_q_asks_while_work_runs_then_stops_it_and_exits_when_it_ended() -> None:
    state = loaded(State(view=View.PIPELINE), Snapshot())
    state, _ = keys(state, "enter")
    state, effects = keys(state, "q")
    assert (effects, state.asking_quit) == ([], True)
    assert state.status == app.QUIT_QUESTION
    state, effects = keys(state, "n")
    assert (effects, state.asking_quit, state.quitting) == ([], False, False)
    state, effects = keys(state, "q", "y")
    assert effects == [Cancel(2)]
    assert state.quitting
    state, effects = keys(state, "1", "r")  # keys do nothing once quitting
    assert (effects, state.view) == ([], View.PIPELINE)
    state, effects = feed(state, TaskDone(2, "interrupted", interrupted=True))
    assert effects == [Exit()]


def test_quitting_waits_for_loading_not() -> None:
    state, _ = app.start(State())
    state, effects = keys(state, "q")
    assert effects == [Exit()]


def test_a_signal_abandons_training_and_stops_stages() -> None:
    snapshot = Snapshot(runs=(RunRow("r1", "running", "local", "2026"),), training=True)
    state = loaded(State(view=View.TRAINING), snapshot)
    state, effects = keys(state, "a")
    assert effects == [Spawn(2, TaskSpec(TaskKind.ATTACH, run_id="r1"))]
    state, effects = feed(state, SignalMsg(signal.SIGTERM))
    assert effects == [Abandon(2)]
    assert state.notes == ("run r1 keeps training: follow it with `overbrainer train attach r1`",)
    assert state.quitting and not state.asking_quit
    state, effects = feed(state, TaskDone(2))
    assert effects == [Exit()]


def test_ctrl_c_key_is_a_signal() -> None:
    state = loaded(State(view=View.PIPELINE), Snapshot())
    state, _ = keys(state, "enter")
    state, effects = keys(state, "ctrl c")
    assert effects == [Cancel(2)]  # a stage stops; only training is abandoned
    assert state.signalled


def test_training_keys() -> None:
    runs = (
        RunRow("r1", "failed", "local", "2026-01", failed=True),
        RunRow("r2", "stopped", "local", "2026-02"),
    )
    state = loaded(State(view=View.TRAINING), Snapshot(runs=runs))
    state, effects = keys(state, "t")
    assert (effects, state.status) == ([], training_keys.NO_TRAINING)
    state = attrs.evolve(state, snapshot=Snapshot(runs=runs, training=True))
    state, effects = keys(state, "x")
    assert [r.id for r in state.visible_runs()] == ["r2"]
    state, effects = keys(state, "T")
    assert effects == [Spawn(2, TaskSpec(TaskKind.RESUME, run_id="r2"))]
    state, effects = keys(state, "t")
    assert effects == []  # one run start at a time
    state, effects = feed(state, TaskReport(2, RunCreated("r3")))
    assert state.status == "run r3 created"
    assert effects == [Spawn(3, TaskSpec(TaskKind.LOAD))]
    state, _ = feed(state, Loaded(3, Snapshot(runs=runs, training=True)))
    state, _ = feed(state, TaskEvent(2, Metric(TrainMetric(time=1.0, step=1, loss=2.5)), 1.0))
    state, _ = feed(state, TaskEvent(2, Metric(TrainMetric(time=2.0, step=2, loss=1.5)), 2.0))
    followed = state.followed_of("r3")
    assert followed is not None
    assert followed.losses == ((1.0, 2.5), (2.0, 1.5))
    state, effects = keys(state, "c")
    assert effects == []  # c asks first: cancel the selected run, or detach from the follower
    assert state.confirm == tuple(line.format(run="r2") for line in training_keys.CANCEL_LINES)
    assert state.status.startswith("cancel run r2? y cancels it, d detaches from ")
    state, effects = keys(state, "d")
    assert effects == [Cancel(2)]
    assert state.confirm == ()
    state, effects = feed(state, TaskDone(2))
    state, effects = keys(state, "x", "down", "s")
    assert effects == [Spawn(5, TaskSpec(TaskKind.STOP, run_id="r2"))]
    state, effects = keys(state, "c", "d")
    assert effects == [Cancel(5)]  # the stop follows the run: d detaches it
    state, effects = feed(state, TaskDone(5))
    assert effects == [Spawn(6, TaskSpec(TaskKind.LOAD))]
    state, effects = keys(state, "up", "c", "n")
    assert (effects, state.status, state.confirm) == ([], "not cancelled", ())
    state, effects = keys(state, "c", "d")
    assert (effects, state.status) == ([], "not cancelled")  # nothing followed: d is a no
    state, effects = keys(state, "c", "y")
    assert effects == [Spawn(7, TaskSpec(TaskKind.CANCEL, run_id="r1"))]
    state, effects = keys(state, "p")
    assert (effects, state.status) == ([], training_keys.POD_HINT)


def test_stop_of_a_run_a_task_follows_only_requests_the_snapshot() -> None:
    runs = (RunRow("r1", "running", "local", "2026-01"),)
    state = loaded(State(view=View.TRAINING), Snapshot(runs=runs, training=True))
    state, effects = keys(state, "a")
    assert effects == [Spawn(2, TaskSpec(TaskKind.ATTACH, run_id="r1"))]
    state, effects = keys(state, "s")
    assert effects == [Spawn(3, TaskSpec(TaskKind.STOP, run_id="r1", followed=True))]


def test_c_before_a_started_run_exists_detaches_without_asking() -> None:
    state = loaded(State(view=View.TRAINING), Snapshot(training=True))
    state, effects = keys(state, "t")
    assert effects == [Spawn(2, TaskSpec(TaskKind.TRAIN))]
    state, effects = keys(state, "c")
    assert effects == [Cancel(2)]
    assert state.confirm == ()


def test_export_runs_once_shows_its_phase_and_lines_and_c_cancels_it() -> None:
    runs = (RunRow("r1", "succeeded", "local", "2026-01"),)
    state = loaded(State(view=View.TRAINING), Snapshot(runs=runs, training=True))
    state, effects = keys(state, "E")
    assert effects == [Spawn(2, TaskSpec(TaskKind.EXPORT, run_id="r1"))]
    assert state.status == "running overbrainer export r1"
    state, effects = keys(state, "E")
    assert (effects, state.status) == ([], "busy: overbrainer export r1 is running (c cancels it)")
    state, effects = keys(state, "C")
    assert (effects, state.status) == ([], "busy: overbrainer export r1 is running (c cancels it)")
    state, _ = feed(state, TaskEvent(2, MarkEvent(StageMark(JobStage.EXPORT)), 2.0))
    assert state.status == "export: exporting GGUF"
    state, _ = feed(state, TaskEvent(2, JobStatusChanged(Running()), 1.0))
    assert state.status == "export: exporting GGUF"  # running says less than the phase
    state, _ = feed(state, TaskEvent(2, JobStatusChanged(Exited(0)), 3.0))
    assert state.status == "export: job exited with code 0"
    state, effects = keys(state, "c")
    assert effects == [Abandon(2)]
    assert state.status == "stopping overbrainer export r1..."
    state, effects = feed(state, TaskDone(2, "export x of run r1 was cancelled", interrupted=True))
    assert state.status == "export x of run r1 was cancelled"
    state, effects = keys(state, "E")
    assert effects[-1] == Spawn(5, TaskSpec(TaskKind.EXPORT, run_id="r1"))
    state, _ = feed(state, TaskReport(5, Line("export: runs/r1/exports/r1-Q4_K_M.gguf")))
    assert state.lines[-1] == "export: runs/r1/exports/r1-Q4_K_M.gguf"
    state, _ = feed(state, TaskDone(5, "export y of run r1 failed: boom"))
    assert state.status == "export failed: export y of run r1 failed: boom"


def test_export_is_refused_while_a_stage_or_a_compare_runs_and_quit_abandons_it() -> None:
    runs = (RunRow("r1", "succeeded", "local", "2026-01"),)
    state = loaded(State(view=View.TRAINING), Snapshot(runs=runs, training=True))
    state, effects = keys(state, "3", "enter", "4", "E")
    assert effects == [Spawn(2, TaskSpec(TaskKind.STAGE, stage=Stage.SUBTOPICS))]
    assert state.status == "busy: overbrainer subtopics is running (c cancels it)"
    state, _ = feed(state, TaskDone(2))
    state, effects = keys(state, "C", "E")
    assert [e for e in effects if isinstance(e, Spawn)][-1].spec.kind is TaskKind.PREPARE_COMPARE
    assert state.status == actions.PREPARE_BUSY
    state, effects = feed(state, ComparePrepared(4, "r1", ("run r1",)), Key("y"), Key("E"))
    assert [e for e in effects if isinstance(e, Spawn)][-1].spec.kind is TaskKind.COMPARE
    assert state.status.startswith("busy: overbrainer compare --run r1 is running")
    state, effects = feed(state, SignalMsg(signal.SIGINT))
    assert effects == [Abandon(5)]


def test_training_without_runs_says_none_is_selected() -> None:
    state = loaded(State(view=View.TRAINING), Snapshot())
    state, effects = keys(state, "a")
    assert (effects, state.status) == ([], "no run selected")


def test_logs_keys_filter_scroll_and_export() -> None:
    state = State(view=View.LOGS)
    assert state.log_level == logging.INFO
    state, _ = keys(state, "f")
    assert state.log_level == logging.WARNING
    state, _ = keys(state, "f", "f")
    assert state.log_level == logging.DEBUG
    state, effects = keys(state, "x")
    assert effects == [ExportLogs(logging.DEBUG)]
    state, _ = keys(state, "page up", "up")
    assert state.log_offset == 11
    state, _ = keys(state, "down", "end")
    assert state.log_offset == 0
    state, effects = keys(state, "s")  # no run: no pod log to read
    assert (effects, state.status) == ([], logs_keys.NO_RUN_LOG)


def test_project_opens_the_editor_and_dataset_edits_or_deletes_one_record_unless_busy() -> None:
    tree = (
        TreeRow(0, "rust"),
        TreeRow(1, "Borrowing", "1 questions", "subtopics", "s1"),
        TreeRow(2, "What is a borrow?", "", "questions", "q1"),
    )
    state = loaded(State(view=View.PROJECT), Snapshot(tree=tree))
    state, effects = keys(state, "e")
    assert effects == [OpenEditor("overbrainer.toml")]
    state, effects = keys(state, "2", "e")
    assert (effects, state.status) == ([], dataset_keys.TOPIC_EDIT)
    state, effects = keys(state, "down", "down", "e")
    edit = TaskSpec(TaskKind.EDIT, record_file="questions", record_id="q1")
    assert effects == [Spawn(2, edit)]
    assert state.status == "editing question q1"
    state, effects = keys(state, "d")
    assert (effects, state.status) == (
        [],
        "busy: edit of data/questions.jsonl q1 is running (c cancels it)",
    )
    state, effects = feed(
        state, TaskDone(2, "nothing changed: the edited question is not valid: x")
    )
    assert state.status == "error: nothing changed: the edited question is not valid: x"
    assert effects == [Spawn(3, TaskSpec(TaskKind.LOAD))]
    state, effects = keys(state, "d")
    assert effects == []
    assert state.confirm == (
        "delete question q1?",
        "What is a borrow?",
        dataset_keys.DELETE_LINES["questions"],
    )
    assert state.status == "delete question q1? y deletes it, any other key does not"
    state, effects = keys(state, "n")
    assert (effects, state.status, state.confirm) == ([], "not deleted", ())
    state, effects = keys(state, "up", "d", "y")
    delete = TaskSpec(TaskKind.DELETE, record_file="subtopics", record_id="s1")
    assert effects == [Spawn(4, delete)]
    state, effects = feed(state, TaskReport(4, Line("deleted subtopic s1 (and 1 question)")))
    state, effects = feed(state, TaskDone(4))
    assert state.status == "deleted subtopic s1 (and 1 question)"
    assert effects == [Spawn(5, TaskSpec(TaskKind.LOAD))]
    state, effects = keys(state, "3", "enter", "2", "e")
    assert effects[1:] == []
    assert state.status.startswith("busy: ")


def test_config_reload_messages() -> None:
    state, effects = feed(State(), ConfigChanged())
    assert state.status == "✓ config reloaded"
    assert effects == [Spawn(1, TaskSpec(TaskKind.LOAD))]
    state, effects = feed(state, ConfigChanged("topics: at least one is needed"))
    assert state.status == "✗ overbrainer.toml: topics: at least one is needed"
    assert effects == []


def test_render_refuses_a_small_terminal() -> None:
    rows = render.body(State(), LogBuffer(), 79, 24)
    assert rows == [[("error", "terminal too small: 79x24, 80x24 needed")]]
    for view in View:
        lines = render.body(State(view=view), LogBuffer(), 80, 24)
        assert 0 < len(lines) <= 20


def test_a_job_status_change_reads_the_runs_again_once() -> None:
    state = loaded(State(view=View.TRAINING), Snapshot(training=True))
    state, effects = keys(state, "t")
    assert effects == [Spawn(2, TaskSpec(TaskKind.TRAIN))]
    state, effects = feed(state, TaskEvent(2, JobStatusChanged(Running()), 1.0))
    assert effects == [Spawn(3, TaskSpec(TaskKind.LOAD))]
    state, effects = feed(state, TaskEvent(2, JobStatusChanged(Running()), 2.0))
    assert effects == []  # a read is under way


def test_while_answers_are_stored_the_latest_is_read_at_most_once_a_second() -> None:
    state, _ = feed(State(), TaskEvent(9, StageStarted(Stage.ANSWERS, 3), 10.0))
    state, effects = feed(state, Tick(10.25))  # the records are counted too (their own test)
    assert effects[0] == Spawn(1, TaskSpec(TaskKind.PREVIEW))
    state, effects = feed(state, Tick(11.5))
    assert effects == []  # one read at a time
    state, effects = feed(state, Previewed(1, "Q? → A."))
    assert (state.preview, effects) == ("Q? → A.", [])
    state, effects = feed(state, Tick(11.0))
    assert effects == []  # less than a second since the last read
    state, effects = feed(state, Tick(11.3))
    assert effects == [Spawn(3, TaskSpec(TaskKind.PREVIEW))]
    state, effects = feed(state, Previewed(3, ""))
    assert state.preview == "Q? → A."  # nothing newer: the old one stays
    state, effects = keys(state, "q")
    assert effects == [Exit()]  # reading does not hold a quit


def test_the_latest_answer_is_read_from_the_end_of_answers_jsonl(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    project = open_project(root)
    assert latest_answer(project) == ""
    write_answered(root, 3)
    last = read_examples(root)[-1]
    assert latest_answer(project) == " → ".join(m.content for m in last.messages[-2:])
    with (root / "data" / "answers.jsonl").open("a") as data:
        data.write('{"id": "torn')
    assert latest_answer(project) == " → ".join(m.content for m in last.messages[-2:])


def test_the_dataset_selection_follows_its_record_when_the_tree_is_read_again() -> None:
    q1 = TreeRow(2, "first?", "", "questions", "q1")
    q2 = TreeRow(2, "second?", "", "questions", "q2")
    state = loaded(State(view=View.DATASET), Snapshot(tree=(TreeRow(0, "rust"), q1, q2)))
    state, _ = keys(state, "down")
    edited = TreeRow(2, "first, better?", "", "questions", "q1")
    state, _ = feed(
        state, Key("ctrl r"), Loaded(2, Snapshot(tree=(TreeRow(0, "rust"), q2, edited)))
    )
    assert state.tree_index == 2  # the edited record moved to the end of its file
    state, _ = feed(state, Key("ctrl r"), Loaded(3, Snapshot(tree=(TreeRow(0, "rust"), q2))))
    assert state.tree_index == 1  # deleted: the same place, within the tree
    rekeyed = TreeRow(2, "second, new words?", "", "questions", "q9")
    state, _ = feed(
        state,
        Key("ctrl r"),
        Rekeyed("questions", "q2", "q9"),
        Loaded(4, Snapshot(tree=(TreeRow(0, "rust"), q1, rekeyed))),
    )
    assert state.tree_index == 2  # an edit gave it a new ID: the selection follows that ID
