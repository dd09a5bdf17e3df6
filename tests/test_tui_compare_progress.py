"""A running compare's progress in the TUI: its job's phases, then its judging, rate and spend."""

from __future__ import annotations

import pytest

from overbrainer.events.codec import event_from_json, event_to_json
from overbrainer.events.types import Event, JobStatusChanged, Judged, MarkEvent, RunWatched
from overbrainer.model.job_kind import JobKind
from overbrainer.model.job_status import Exited
from overbrainer.model.train_metric import EvalMark, JobStage, StageMark
from overbrainer.ui.logs import LogBuffer
from overbrainer.ui.tui import app, render
from overbrainer.ui.tui.compare_progress import CompareProgress
from overbrainer.ui.tui.effects import Spawn
from overbrainer.ui.tui.messages import Key, TaskDone, TaskEvent
from overbrainer.ui.tui.state import State, View
from overbrainer.ui.tui.task_spec import TaskKind, TaskSpec
from tests.tui_app_support import feed

COMPARE = TaskSpec(TaskKind.COMPARE, run_id="run_b")


def shown(state: State) -> str:
    lines = render.body(state, LogBuffer(), 100, 30)
    return "\n".join("".join(p if isinstance(p, str) else p[1] for p in line) for line in lines)


def started(spec: TaskSpec = COMPARE) -> State:
    state, effects = app.update(
        State(view=View.COMPARE, confirm=("x",), confirm_spec=spec), Key("y")
    )
    assert effects == [Spawn(1, spec)]
    return state


def test_a_compare_shows_each_phase_of_its_job_then_its_judging() -> None:
    state = started()
    assert state.compare_progress == CompareProgress("preparing")
    assert "overbrainer compare --run run_b: preparing" in shown(state)
    steps: list[tuple[Event, str]] = [
        (RunWatched("compare_1", JobKind.COMPARE), "compare: starting llama-server"),
        (MarkEvent(StageMark(JobStage.COMPARE)), "compare: starting llama-server"),
        (MarkEvent(EvalMark(0, 5)), "compare: answering 0/5"),
        (MarkEvent(EvalMark(3, 5)), "compare: answering 3/5"),
        (
            JobStatusChanged(Exited(0)),
            "compare: job exited with code 0, retrieving results",
        ),
        (Judged("compare_1", 1, 5, 0.0007), "compare: judging 1/5, 0.5/s, $0.0007"),
        (Judged("compare_1", 3, 5, 0.0021), "compare: judging 3/5, 0.8/s, $0.0021"),
    ]
    for at, (event, status) in enumerate(steps):
        state, _ = feed(state, TaskEvent(1, event, 10.0 + at * 2))
        assert state.status == status
    assert "Running\n  overbrainer compare --run run_b: judging 3/5, 0.8/s, $0.0021" in shown(state)
    state, _ = feed(state, TaskDone(1))
    assert state.compare_progress is None
    assert state.status == app.COMPARE_WRITTEN
    assert "Running" not in shown(state)


def test_a_rejudge_starts_judging_and_a_judge_without_price_shows_no_spend() -> None:
    spec = TaskSpec(TaskKind.REJUDGE, run_id="run_b", compare_id="compare_1")
    state = started(spec)
    assert state.compare_progress == CompareProgress("judging", since=0.0)
    # Resumed: one verdict was written before; a first burst shows no rate yet.
    state, _ = feed(state, TaskEvent(1, Judged("compare_1", 2, 4), 0.5))
    assert state.status == "compare: judging 2/4"
    state, _ = feed(state, TaskEvent(1, Judged("compare_1", 4, 4), 2.0))
    assert state.status == "compare: judging 4/4, 1.5/s"


def test_events_of_another_task_leave_the_compare_alone() -> None:
    state = started()
    before = state.status
    state, _ = feed(state, TaskEvent(7, MarkEvent(EvalMark(1, 5)), 1.0))
    assert state.status == before


@pytest.mark.parametrize("cost", [None, 0.0125])
def test_the_judged_event_keeps_its_reference_shape_unless_a_price_is_known(
    cost: float | None,
) -> None:
    event = Judged("compare_1", 2, 5, cost)
    line = event_to_json(event)
    assert ('"cost"' in line) is (cost is not None)
    assert event_from_json(line) == event
