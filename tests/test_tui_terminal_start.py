"""`overbrainer tui` end to end in a real terminal (tmux): how it starts (no terminal, a
small one, keys typed early) and a project it cannot read."""

from __future__ import annotations

from pathlib import Path

from tests.pipeline_support import (
    make_project,
    overbrainer,
)
from tests.tui_support import needs_tmux, open_terminal

pytestmark = needs_tmux


async def test_without_a_terminal_it_refuses_with_exit_2(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    result = await overbrainer(root, "tui", url="http://127.0.0.1:9/v1")
    assert result.code == 2
    assert result.stderr.splitlines() == [
        "error: overbrainer tui needs a terminal: stdout is not a TTY"
    ]
    assert not (root / ".overbrainer" / "lock").exists()  # refused before anything


async def test_keys_typed_while_it_starts_are_kept(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_terminal(root, "tui") as term:
        await term.keys("6", "f")  # at once: the program is still starting
        shown = await term.wait_for("no compare yet")
        assert "showing losses" in shown
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown


async def test_a_small_terminal_is_refused(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_terminal(root, "tui", size=(70, 20)) as term:
        shown = await term.wait_for("EXIT=")
    unwrapped = "".join(shown.splitlines())  # the line wraps at 70 columns
    refusal = "error: overbrainer tui needs a terminal of at least 80x24: this one is 70x20"
    assert refusal in unwrapped
    assert "EXIT=2" in shown


async def test_a_project_that_cannot_be_read_is_shown_not_fatal(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_terminal(root, "tui") as term:
        await term.wait_for("nothing run yet")
        (root / "overbrainer.toml").rename(root / "moved.toml")
        await term.wait_for("✗ overbrainer.toml: cannot read", limit=10)  # the reload's check
        await term.keys("C-r")
        await term.wait_for("error: cannot read the project: cannot read")
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown
