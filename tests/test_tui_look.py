"""How the TUI looks: OVERBRAINER_TUI_COLOR, OVERBRAINER_TUI_MOTION and NO_COLOR, read once."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import trio

from overbrainer.devtools.stub_model import default_reply
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.ui.tui.look import (
    SPINNER,
    ColorLevel,
    Look,
    Motion,
    look_of,
    palette,
    working_mark,
)
from tests.pipeline_support import make_project
from tests.tui_support import Terminal, needs_tmux, open_terminal


@pytest.mark.parametrize(
    ("environ", "look"),
    [
        ({}, Look(ColorLevel.C16, Motion.ON)),
        ({"TERM": "tmux-256color"}, Look(ColorLevel.C256, Motion.ON)),
        (
            {"TERM": "xterm-256color", "COLORTERM": "truecolor"},
            Look(ColorLevel.TRUECOLOR, Motion.ON),
        ),
        ({"COLORTERM": "24bit"}, Look(ColorLevel.TRUECOLOR, Motion.ON)),
        (
            {"COLORTERM": "truecolor", "OVERBRAINER_TUI_COLOR": "16"},
            Look(ColorLevel.C16, Motion.ON),
        ),
        ({"OVERBRAINER_TUI_COLOR": "256"}, Look(ColorLevel.C256, Motion.ON)),
        ({"OVERBRAINER_TUI_COLOR": "TrueColor"}, Look(ColorLevel.TRUECOLOR, Motion.ON)),
        ({"SSH_CONNECTION": "10.0.0.1 5 10.0.0.2 22"}, Look(ColorLevel.C16, Motion.REDUCED)),
        (
            {"SSH_TTY": "/dev/pts/1", "OVERBRAINER_TUI_MOTION": "on"},
            Look(ColorLevel.C16, Motion.ON),
        ),
        ({"SSH_TTY": ""}, Look(ColorLevel.C16, Motion.ON)),
        ({"OVERBRAINER_TUI_MOTION": "off"}, Look(ColorLevel.C16, Motion.OFF)),
        ({"NO_COLOR": "1", "OVERBRAINER_TUI_COLOR": "256"}, Look(ColorLevel.MONO, Motion.OFF)),
        ({"NO_COLOR": "", "TERM": "screen-256color"}, Look(ColorLevel.C256, Motion.ON)),
    ],
)
def test_the_look_follows_the_environment(environ: dict[str, str], look: Look) -> None:
    assert look_of(environ) == look


def test_an_unknown_value_is_ignored_with_a_warning() -> None:
    look = look_of({"OVERBRAINER_TUI_COLOR": "88", "OVERBRAINER_TUI_MOTION": "fast"})
    assert (look.color, look.motion) == (ColorLevel.C16, Motion.ON)
    assert look.warnings == (
        "OVERBRAINER_TUI_COLOR='88' is not truecolor, 256 or 16: ignored",
        "OVERBRAINER_TUI_MOTION='fast' is not on, reduced or off: ignored",
    )


def test_each_level_has_every_attribute_the_views_use() -> None:
    names = {entry[0] for entry in palette(ColorLevel.C16)}
    for level in ColorLevel:
        assert {entry[0] for entry in palette(level)} == names
    assert {"body", "tab", "selected", "error", "warn", "gauge", "chart"} <= names


def test_the_spinner_turns_unless_motion_is_off() -> None:
    frames = {working_mark(Motion.ON, t / 10) for t in range(10)}
    assert frames == set(SPINNER)
    assert working_mark(Motion.REDUCED, 0.35) == SPINNER[3]
    assert working_mark(Motion.OFF, 0.35) == ""


async def screen_escapes(term: Terminal) -> str:
    """The screen with its colours and attributes as escape sequences."""
    return await term.tmux("capture-pane", "-e", "-p", "-t", "main")


@needs_tmux
@pytest.mark.parametrize(
    ("level", "background"),
    [("truecolor", "48;2;42;10;18"), ("256", "48;5;52"), ("16", None)],
)
async def test_the_colour_level_paints_the_background(
    tmp_path: Path, level: str, background: str | None
) -> None:
    root = make_project(tmp_path / "p")
    env = {"NO_COLOR": "", "OVERBRAINER_TUI_COLOR": level}
    async with open_stub() as stub, open_terminal(root, "tui", url=stub.url, env=env) as term:
        await term.wait_for("nothing run yet in this session")
        painted = await screen_escapes(term)
        if background is None:  # the terminal's own background: no 256 or 24-bit colour
            assert "48;5;" not in painted and "48;2;" not in painted
            assert "\x1b[" in painted  # yet coloured: the tabs' named colours
        else:
            assert background in painted, painted[:400]
        await term.keys("q")
        await term.wait_for("EXIT=0")


@needs_tmux
async def test_no_color_draws_no_colour(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub, open_terminal(root, "tui", url=stub.url) as term:
        await term.wait_for("nothing run yet in this session")
        painted = await screen_escapes(term)
        assert "38;5;" not in painted and "48;5;" not in painted and "48;2;" not in painted
        named = [*range(30, 38), *range(40, 48), *range(90, 98), *range(100, 108)]
        assert not any(f"\x1b[{n}m" in painted or f";{n}m" in painted for n in named), painted
        await term.keys("q")
        await term.wait_for("EXIT=0")


@needs_tmux
@pytest.mark.parametrize("motion", ["on", "off"])
async def test_a_spinner_turns_while_work_runs_unless_motion_is_off(
    tmp_path: Path, motion: str
) -> None:
    root = make_project(tmp_path / "p")
    env = {"NO_COLOR": "", "OVERBRAINER_TUI_MOTION": motion, "OVERBRAINER_TUI_COLOR": "bright"}
    released = trio.Event()

    async def held(request: Recorded) -> Reply:
        # The work lasts until the test has looked, however slow the machine.
        await released.wait()
        return default_reply(request)

    async with (
        open_stub(held) as stub,
        open_terminal(root, "tui", url=stub.url, env=env) as term,
    ):
        await term.wait_for("nothing run yet in this session")
        await term.keys("Enter")
        await term.wait_for("running overbrainer subtopics")
        seen: set[str] = set()
        # On: until two of the spinner's frames were drawn. Off: twelve looks over ≥ 1.8 s, in
        # which a turning spinner would have drawn a dozen frames.
        with trio.fail_after(60):
            for look in itertools.count():
                status = next(
                    line
                    for line in (await term.screen()).splitlines()
                    if "overbrainer subtopics" in line
                )
                seen.add(status[0])
                if motion == "on" and len(seen & set(SPINNER)) >= 2:
                    break
                if motion == "off" and look == 11:
                    break
                await trio.sleep(0.15)
        if motion == "off":
            assert seen == {"r"}, seen  # the status line as it is: nothing moves
        released.set()
        await term.keys("5")
        shown = await term.wait_for("subtopics: 2 done, 0 skipped", limit=30)
        assert "OVERBRAINER_TUI_COLOR='bright' is not truecolor, 256 or 16: ignored" in shown
        await term.keys("q")
        await term.wait_for("EXIT=")
