"""The Pipeline view's `r` menu: a topic (or all) and `--force` before the stage runs."""

from __future__ import annotations

from overbrainer.events.types import Stage
from overbrainer.ui.logs import LogBuffer
from overbrainer.ui.tui import render
from overbrainer.ui.tui.effects import Spawn
from overbrainer.ui.tui.snapshot import Snapshot
from overbrainer.ui.tui.state import State, View
from overbrainer.ui.tui.task_spec import TaskKind, TaskSpec
from tests.tui_app_support import keys

TOPICS = ("ownership", "async")


def shown(state: State) -> str:
    lines = render.body(state, LogBuffer(), 100, 30)
    return "\n".join("".join(p if isinstance(p, str) else p[1] for p in line) for line in lines)


def pipeline() -> State:
    return State(view=View.PIPELINE, snapshot=Snapshot(topics=TOPICS))


def test_r_asks_first_and_enter_in_the_menu_runs_the_stage_on_every_topic() -> None:
    state, effects = keys(pipeline(), "r")
    assert effects == []
    assert state.status == "run overbrainer subtopics? r or Enter runs it, Esc or n does not"
    screen = shown(state)
    assert "run overbrainer subtopics?" in screen
    assert "t/←/→ topic: all (2)" in screen
    assert "f --force: off: only what is missing" in screen
    state, effects = keys(state, "enter")
    assert effects == [Spawn(1, TaskSpec(TaskKind.STAGE, stage=Stage.SUBTOPICS))]
    assert state.run_menu is None
    assert state.status == "running overbrainer subtopics"


def test_t_and_the_arrows_pick_a_topic_and_f_adds_force() -> None:
    state, _ = keys(pipeline(), "down", "r", "t")
    assert "t/←/→ topic: ownership" in shown(state)
    state, _ = keys(state, "right")
    assert "t/←/→ topic: async" in shown(state)
    state, _ = keys(state, "t")
    assert "t/←/→ topic: all (2)" in shown(state)
    state, _ = keys(state, "left", "f")
    screen = shown(state)
    assert "run overbrainer questions --topic async --force?" in screen
    assert "f --force: on: every selected subtopic's questions are asked for again (paid)" in screen
    state, effects = keys(state, "r")
    spec = TaskSpec(TaskKind.STAGE, stage=Stage.QUESTIONS, topic="async", force=True)
    assert effects == [Spawn(1, spec)]
    assert state.status == "running overbrainer questions --topic async --force"


def test_esc_or_n_runs_nothing_and_split_has_no_force() -> None:
    for key in ("esc", "n"):
        state, effects = keys(pipeline(), "r", "f", key)
        assert (effects, state.run_menu, state.status) == ([], None, "not run")
    state, _ = keys(pipeline(), "end", "r", "f")
    assert state.run_menu is not None and not state.run_menu.force
    assert state.status.startswith("split has no --force")
    state, effects = keys(state, "t", "r")
    assert effects == [Spawn(1, TaskSpec(TaskKind.STAGE, stage=Stage.SPLIT, topic="ownership"))]


def test_enter_outside_the_menu_runs_at_once_and_a_busy_project_opens_no_menu() -> None:
    state, effects = keys(pipeline(), "enter")
    assert effects == [Spawn(1, TaskSpec(TaskKind.STAGE, stage=Stage.SUBTOPICS))]
    state, effects = keys(state, "r")
    assert effects == [] and state.run_menu is None
    assert state.status == "busy: overbrainer subtopics is running (c cancels it)"
