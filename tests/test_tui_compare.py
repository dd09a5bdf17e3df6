"""The Compare view and the Training view's push and compare keys, as a pure state machine."""

from __future__ import annotations

import signal
from pathlib import Path

import attrs
import pytest

from overbrainer.compare.verdicts import Verdict
from overbrainer.hub.errors import PushRefused
from overbrainer.project.directory import open_project
from overbrainer.ui.logs import LogBuffer
from overbrainer.ui.tui import actions, app, compare_keys, render
from overbrainer.ui.tui.compare_view import NO_COMPARE, screen_layout
from overbrainer.ui.tui.compares import latest_compare_line, read_compares
from overbrainer.ui.tui.effects import Abandon, Cancel, Exit, Spawn
from overbrainer.ui.tui.messages import (
    ComparePrepared,
    Key,
    Loaded,
    PushPlanned,
    Resized,
    SignalMsg,
    TaskDone,
)
from overbrainer.ui.tui.push_plan import plan_lines
from overbrainer.ui.tui.snapshot import CompareRow, RunRow, Snapshot
from overbrainer.ui.tui.state import State, View
from overbrainer.ui.tui.task_spec import TaskKind, TaskSpec
from tests.hub_support import RUN_ID, make_run
from tests.tui_app_support import feed, keys
from tests.tui_compare_support import write_compare


def compares(tmp_path: Path) -> tuple[CompareRow, ...]:
    write_compare(tmp_path / "run_a", "compare_20261001-000000", "2026-10-01T00:00:00Z")
    write_compare(
        tmp_path / "run_b",
        "compare_20261002-000000",
        "2026-10-02T00:00:00Z",
        (Verdict.WIN, Verdict.TIE, Verdict.WIN, Verdict.LOSS),
    )
    return read_compares(tmp_path)


def shown(state: State, cols: int = 100, rows: int = 30) -> str:
    lines = render.body(state, LogBuffer(), cols, rows)
    return "\n".join("".join(p if isinstance(p, str) else p[1] for p in line) for line in lines)


def test_compares_are_read_newest_first_with_their_marks(tmp_path: Path) -> None:
    rows = compares(tmp_path)
    assert [(r.run, r.id, r.questions, r.percent) for r in rows] == [
        ("run_b", "compare_20261002-000000", 4, "75%"),
        ("run_a", "compare_20261001-000000", 5, "50%"),
    ]
    assert [i.mark for i in rows[1].items] == ["✓", "=", "✗", "!", "?"]
    assert rows[1].items[3].error == "timed out"
    assert latest_compare_line(rows, "run_b") == (
        "compare: 75% win or tie (compare_20261002-000000, 4 questions)"
    )
    assert latest_compare_line(rows, "run_c") == ""
    (tmp_path / "run_c" / "compares" / "compare_x").mkdir(parents=True)
    (tmp_path / "run_c" / "compares" / "compare_x" / "compare.json").write_text("{torn")
    assert len(read_compares(tmp_path)) == 2  # an unreadable one is skipped


def test_keys_move_filter_and_show_the_detail(tmp_path: Path) -> None:
    state = State(view=View.COMPARE, snapshot=Snapshot(compares=compares(tmp_path)))
    assert "run_b  Q4_K_M   75% win or tie" in shown(state)
    state, _ = keys(state, "h", "j")  # the compares pane: the older one
    assert (state.compare_index, state.selected_compare().run) == (1, "run_a")  # type: ignore[union-attr]
    state, _ = keys(state, "l", "j", "j")
    assert state.compare_items()[state.item_index].id == "q2"
    screen = shown(state)
    assert "▶ ✗ q2  Question 2" in screen
    assert "child: Child answer 2." in screen
    assert "parent: Parent answer 2: it lends a value." in screen
    assert "judge: loss: reason 2: loss" in screen
    filters = []
    for _ in range(5):
        state, _ = keys(state, "f")
        filters.append((state.status, [i.id for i in state.compare_items()], state.item_index))
    assert filters == [
        ("showing losses", ["q2", "q3"], 0),
        ("showing ties", ["q1"], 0),
        ("showing wins", ["q0"], 0),
        ("showing errors", ["q3", "q4"], 0),
        ("showing all", ["q0", "q1", "q2", "q3", "q4"], 0),
    ]
    state, _ = keys(state, "f", "j")
    assert "child: (no answer: timed out)" in shown(state)


def detail_top(state: State) -> str:
    """The first detail line the Compare view shows (the line below its rule)."""
    lines = shown(state, state.cols, state.rows).splitlines()
    at = next(n for n, line in enumerate(lines) if "(PgUp/PgDn)" in line)
    return lines[at + 1]


def test_brackets_jump_between_the_parts_of_the_detail(tmp_path: Path) -> None:
    rows = compares(tmp_path)
    long = "A long parent answer. " * 200
    items = tuple(attrs.evolve(i, parent=long) for i in rows[1].items)
    row = attrs.evolve(rows[1], items=items)
    state = State(view=View.COMPARE, snapshot=Snapshot(compares=(row,)), cols=100, rows=30)
    assert detail_top(state).startswith("question: Question 0")
    tops = []
    for key in ("]", "]", "]", "]", "[", "[", "[", "["):
        state, effects = keys(state, key)
        assert effects == []
        tops.append((state.item_index, state.detail_offset, detail_top(state)[:12]))
    last = screen_layout(state).last_offset
    assert last > 3
    assert tops == [
        (0, 1, "child: Child"),
        (0, 2, "parent: A lo"),
        (0, last, tops[2][2]),  # the judge's line is on the last page: that page is shown
        (0, last, tops[2][2]),
        (0, 2, "parent: A lo"),
        (0, 1, "child: Child"),
        (0, 0, "question: Qu"),
        (0, 0, "question: Qu"),
    ]
    assert "judge: win: reason 0: win" in shown(keys(state, "]", "]", "]")[0], 100, 30)
    state, _ = keys(state, "j")
    assert (state.item_index, state.detail_offset) == (1, 0)  # a new question starts at its top


def test_brackets_jump_to_the_answers_side_by_side(tmp_path: Path) -> None:
    rows = compares(tmp_path)
    state = State(view=View.COMPARE, snapshot=Snapshot(compares=rows), cols=120, rows=24)
    layout = screen_layout(state)
    assert layout.parts == (0, 1, 2)  # question, both answers on one line, judge
    assert layout.last_offset == 0  # it all fits: nothing to scroll
    state, _ = keys(state, "]", "]", "page down")
    assert state.detail_offset == 0


def test_page_keys_scroll_a_long_detail_and_stop_at_its_last_page(tmp_path: Path) -> None:
    rows = compares(tmp_path)
    long = "A long parent answer. " * 200
    items = tuple(attrs.evolve(i, parent=long) for i in rows[1].items)
    row = attrs.evolve(rows[1], items=items)
    state = State(view=View.COMPARE, snapshot=Snapshot(compares=(row,)), cols=100, rows=30)
    top = shown(state)
    assert "question: Question 0" in top
    assert "lines 1-" in top and "(PgUp/PgDn)" in top
    state, _ = keys(state, "page down")
    assert state.detail_offset == compare_keys.DETAIL_PAGE
    scrolled = shown(state)
    assert "question: Question 0" not in scrolled
    assert f"lines {compare_keys.DETAIL_PAGE + 1}-" in scrolled
    state, _ = keys(state, "page up", "page up")
    assert state.detail_offset == 0
    assert shown(state) == top
    state, _ = keys(state, *["page down"] * 30)
    last = screen_layout(state).last_offset
    assert state.detail_offset == last  # clamped: not 300
    bottom = shown(state)
    assert "judge: win: reason 0: win" in bottom
    state, _ = keys(state, "page up")  # one key scrolls back at once
    assert state.detail_offset == last - compare_keys.DETAIL_PAGE
    state, _ = feed(state, Resized(200, 60))  # a bigger terminal: the offset is clamped again
    state, _ = keys(state, "page down")
    assert state.detail_offset == screen_layout(state).last_offset < last


def test_the_answers_are_side_by_side_from_120_columns(tmp_path: Path) -> None:
    state = State(view=View.COMPARE, snapshot=Snapshot(compares=compares(tmp_path)))
    wide = shown(state, cols=120)
    assert any(
        "child: Child answer 0." in line and "│ parent: Parent answer 0" in line
        for line in wide.splitlines()
    )
    narrow = shown(state, cols=119)
    assert "│" not in narrow
    assert "child: Child answer 0." in narrow and "parent: Parent answer 0" in narrow


def test_an_empty_compare_view_says_how_to_get_one() -> None:
    assert NO_COMPARE in shown(State(view=View.COMPARE))
    state, effects = keys(State(view=View.COMPARE), "J")
    assert (effects, state.status) == ([], NO_COMPARE)


LINES = (
    "run run_b, output/gguf/run_b-Q4_K_M.gguf",
    "4 questions of data/eval.jsonl, on target `local`",
    "the judge is called once per question",
    "y compares, n or Esc does not",
)


def test_c_plans_the_compare_then_asks_and_only_y_starts_it(tmp_path: Path) -> None:
    state = State(view=View.COMPARE, snapshot=Snapshot(compares=compares(tmp_path)))
    state, effects = keys(state, "C")
    assert effects == [Spawn(1, TaskSpec(TaskKind.PREPARE_COMPARE))]  # nothing paid yet
    assert state.status == actions.PREPARING
    state, effects = keys(state, "C")
    assert (effects, state.status) == ([], actions.PREPARE_BUSY)  # one compare at a time
    state, effects = feed(state, ComparePrepared(1, "run_b", LINES))
    assert (effects, state.confirm) == ([], LINES)
    assert state.status == "compare run run_b? y compares, n or Esc does not"
    screen = shown(state)
    assert "4 questions of data/eval.jsonl, on target `local`" in screen
    assert "the judge is called once per question" in screen
    for key in ("n", "esc"):
        asked, _ = feed(state, ComparePrepared(1, "run_b", LINES))
        dropped, effects = keys(asked, key)
        assert (effects, dropped.confirm, dropped.status) == ([], (), "not compared")
        assert dropped.tasks == ()
    state, effects = keys(state, "y")
    assert effects == [Spawn(2, TaskSpec(TaskKind.COMPARE, run_id="run_b"))]
    assert state.status == "running overbrainer compare --run run_b"
    state, effects = feed(state, TaskDone(2))
    assert state.status == app.COMPARE_WRITTEN
    assert effects == [Spawn(3, TaskSpec(TaskKind.LOAD))]


def test_a_plan_that_fails_shows_its_error_and_starts_nothing(tmp_path: Path) -> None:
    state, _ = keys(State(view=View.COMPARE), "C")
    error = "no run has a GGUF: export one with `overbrainer export <run-id>`, then compare"
    state, effects = feed(state, ComparePrepared(1, error=error))
    assert (effects, state.confirm, state.status, state.tasks) == ([], (), error, ())
    state, effects = keys(state, "y")  # no confirmation is up: y is no key of the view
    assert effects == []


def test_one_compare_at_a_time_refused_while_a_stage_runs_and_c_abandons(tmp_path: Path) -> None:
    state = State(view=View.COMPARE, snapshot=Snapshot(compares=compares(tmp_path)))
    state, effects = feed(state, Key("C"), ComparePrepared(1, "run_b", LINES), Key("y"))
    assert effects == [
        Spawn(1, TaskSpec(TaskKind.PREPARE_COMPARE)),
        Spawn(2, TaskSpec(TaskKind.COMPARE, run_id="run_b")),
    ]
    state, effects = keys(state, "J")
    assert (effects, state.status) == (
        [],
        "busy: overbrainer compare --run run_b is running (c cancels it)",
    )
    state, effects = keys(state, "C")
    assert (effects, state.status[:5]) == ([], "busy:")
    state, effects = keys(state, "c")
    assert effects == [Abandon(2)]
    state, effects = feed(state, TaskDone(2, "interrupted: compare stopped", interrupted=True))
    assert state.status == "compare failed: interrupted: compare stopped"
    assert effects == [Spawn(3, TaskSpec(TaskKind.LOAD))]  # the list is read again
    state, effects = keys(state, "J")
    assert effects == []  # the judge is paid: asked first
    assert state.confirm[0] == "rejudge compare_20261002-000000 of run run_b?"
    assert state.status == f"rejudge compare_20261002-000000? {compare_keys.REJUDGE_ASK}"
    dropped, effects = keys(state, "n")
    assert (effects, dropped.confirm, dropped.status) == ([], (), "not rejudged")
    state, effects = keys(state, "y")
    rejudge = TaskSpec(TaskKind.REJUDGE, run_id="run_b", compare_id="compare_20261002-000000")
    assert effects == [Spawn(4, rejudge)]
    state, _ = feed(state, TaskDone(4))
    assert state.status == app.COMPARE_WRITTEN
    state, effects = keys(state, "3", "enter", "6", "C")  # a stage holds the data lock
    assert effects[1:] == []
    assert state.status == "busy: overbrainer subtopics is running (c cancels it)"
    state, effects = keys(State(view=View.COMPARE), "c")
    assert (effects, state.status) == ([], "no compare is running")


def test_quitting_abandons_a_running_compare_and_waits_for_it() -> None:
    state, effects = feed(
        State(view=View.COMPARE), Key("C"), ComparePrepared(1, "run_b", LINES), Key("y")
    )
    state, effects = keys(state, "q", "y")
    assert effects == [Abandon(2)]
    assert state.status == "waiting for the compare to stop..."
    state, effects = feed(state, TaskDone(2, "interrupted", interrupted=True))
    assert effects == [Exit()]
    state, _ = feed(State(view=View.COMPARE), Key("C"), ComparePrepared(1, "r", LINES), Key("y"))
    state, effects = feed(state, SignalMsg(signal.SIGTERM))
    assert effects == [Abandon(2)]


def test_quitting_while_a_compare_is_planned_starts_nothing() -> None:
    state, effects = keys(State(view=View.COMPARE), "C", "q")
    assert effects[1:] == [Exit()]  # planning only reads: nothing to wait for
    state, effects = feed(state, ComparePrepared(1, "run_b", LINES))
    assert (effects, state.confirm) == ([Exit()], ())


def test_training_c_compares_the_selected_run_and_rows_show_its_compare(tmp_path: Path) -> None:
    runs = (
        RunRow("run_a", "succeeded", "local", "t1"),
        RunRow("run_b", "succeeded", "local", "t2"),
    )
    snapshot = Snapshot(runs=runs, compares=compares(tmp_path))
    state, _ = feed(State(view=View.TRAINING), Loaded(0, snapshot))
    screen = shown(state)
    assert "compare: 50% win or tie (compare_20261001-000000, 5 questions)" in screen
    assert "compare: 75% win or tie (compare_20261002-000000, 4 questions)" in screen
    state, effects = keys(state, "j", "C")
    assert effects == [Spawn(1, TaskSpec(TaskKind.PREPARE_COMPARE, run_id="run_b"))]
    state, effects = feed(state, ComparePrepared(1, "run_b", LINES), Key("y"))
    assert effects == [Spawn(2, TaskSpec(TaskKind.COMPARE, run_id="run_b"))]
    state, effects = keys(state, "up", "C")
    assert (effects, state.status) == (
        [],
        "busy: overbrainer compare --run run_b is running (c cancels it)",
    )


def test_a_plan_arriving_while_another_question_is_up_does_not_replace_it() -> None:
    runs = (RunRow("run_a", "running", "local", "t1"),)
    state, _ = feed(State(view=View.TRAINING), Loaded(0, Snapshot(runs=runs)))
    state, effects = keys(state, "C", "c")  # plan the compare, then ask to cancel the run
    assert effects == [Spawn(1, TaskSpec(TaskKind.PREPARE_COMPARE, run_id="run_a"))]
    asked = state.confirm
    state, effects = feed(state, ComparePrepared(1, "run_a", LINES))
    assert (effects, state.confirm, state.status) == ([], asked, app.PREPARED_LATE)
    state, effects = keys(state, "y")
    assert effects == [Spawn(2, TaskSpec(TaskKind.CANCEL, run_id="run_a"))]


def test_training_h_confirms_the_push_then_y_pushes() -> None:
    runs = (RunRow("run_a", "succeeded", "local", "t1"),)
    state, _ = feed(State(view=View.TRAINING), Loaded(0, Snapshot(runs=runs)))
    state, effects = keys(state, "h")
    assert effects == [Spawn(1, TaskSpec(TaskKind.PUSH_PLAN, run_id="run_a"))]
    lines = ("push run run_a to the Hugging Face Hub", "repo: me/demo", "visibility: private")
    state, effects = feed(state, PushPlanned(1, "run_a", lines))
    assert (effects, state.confirm) == ([], lines)
    assert "repo: me/demo" in shown(state)
    state, effects = keys(state, "n")
    assert (effects, state.confirm, state.status) == ([], (), "not pushed")
    state, _ = keys(state, "h")
    state, effects = feed(state, PushPlanned(2, "run_a", lines), Key("y"))
    assert effects == [Spawn(3, TaskSpec(TaskKind.PUSH, run_id="run_a"))]
    state, effects = keys(state, "h")
    assert (effects, state.status) == ([], "busy: a push is running")
    state, effects = feed(state, TaskDone(3), Key("h"))
    assert effects[-1] == Spawn(5, TaskSpec(TaskKind.PUSH_PLAN, run_id="run_a"))
    refused = PushPlanned(5, "run_a", error="run run_a is failed: only a succeeded run")
    state, effects = feed(state, refused)
    assert (effects, state.confirm) == ([], ())
    assert state.status == "push refused: run run_a is failed: only a succeeded run"
    assert not [e for e in effects if isinstance(e, Cancel)]


def test_the_push_confirmation_is_planned_from_the_run_without_network(tmp_path: Path) -> None:
    root = tmp_path / "p"
    make_run(root)
    lines = plan_lines(open_project(root), RUN_ID)
    assert lines == (
        f"push run {RUN_ID} to the Hugging Face Hub",
        "repo: <your namespace>/my-project (the token's)",
        "visibility: private",
        "files: 5, 0.1 MB (102853 bytes), and README.md",
        "  Modelfile (0.0 MB)",
        "  adapter_config.json (0.0 MB)",
        "  adapter_model.safetensors (0.0 MB)",
        f"  {RUN_ID}-Q4_K_M.gguf (0.0 MB)",
        "  tokenizer.json (0.0 MB)",
        "y pushes, any other key does not",
    )
    failed = tmp_path / "f"
    make_run(failed, state="failed")
    with pytest.raises(PushRefused, match="only a succeeded or stopped run can be pushed"):
        plan_lines(open_project(failed), RUN_ID)
