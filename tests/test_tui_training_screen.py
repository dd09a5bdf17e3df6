"""The Training view's loss chart, system panel and step/ETA on a real screen (tmux), with
the test suite's stand-in `axolotl` training a local run."""

from __future__ import annotations

import re
from pathlib import Path

import trio

from tests import train_helpers
from tests.tui_support import Terminal, needs_tmux, open_terminal

pytestmark = needs_tmux

KEYS_LINE = "t start a attach c cancel s stop T resume E export h push C compare"
GAUGE = re.compile(r"^  (cpu|mem|disk|root) +\[[█░]{12}\] +\d+%")


async def wait_shown(term: Terminal, pattern: re.Pattern[str], limit: float = 60) -> str:
    """The screen once a line of it matches `pattern`."""
    shown = ""
    with trio.move_on_after(limit):
        while True:
            shown = await term.screen()
            if any(pattern.search(line) for line in shown.splitlines()):
                return shown
            await trio.sleep(0.1)
    raise AssertionError(f"{pattern.pattern!r} not shown in {limit} s; the screen:\n{shown}")


def chart_rows(screen: str) -> list[str]:
    """The loss chart's plot rows (those with a y-axis)."""
    return [line for line in screen.splitlines() if re.match(r"^ +[\d.e+-]* ?[┤│]", line)]


def assert_fits(screen: str, cols: int, rows: int) -> None:
    """Nothing overflowed: the tab bar on top, the Runs title below it, the divider, status and
    keys at the bottom, no line wider than the screen."""
    lines = screen.rstrip("\n").split("\n")
    assert len(lines) <= rows
    assert max(len(line) for line in lines) <= cols
    assert lines[0].startswith(" 1 Project") and lines[1].startswith("Runs"), screen
    divider = next(i for i, line in enumerate(lines) if line.startswith("─" * 20))
    assert any(line.startswith(KEYS_LINE) for line in lines[divider:]), screen
    assert lines[-1].endswith("q quit"), screen
    assert any(line.startswith("System of ") for line in lines[:divider]), screen
    # The panel's last row is the last of the body: none cut off by a wrapped keys line.
    last = [line for line in lines[:divider] if line.strip()][-1]
    assert re.match(r"^  (gpu +none found|disk|root) ", last), screen


async def test_a_followed_run_shows_its_step_eta_loss_chart_and_machine(tmp_path: Path) -> None:
    root = train_helpers.make_project(tmp_path / "p")
    env = train_helpers.standin_env(tmp_path / "bin", STANDIN_STEPS="3000", STANDIN_PACE="0.05")
    try:
        async with open_terminal(root, "tui", env=env, size=(80, 24)) as term:
            await term.wait_for("nothing run yet")
            await term.keys("4", "t")
            shown = await term.wait_for(" created")
            run_id = shown.split("run ", 1)[1].split(" created")[0].split()[-1]
            # The run's row: its step of the total and, once two logs gave a rate, its ETA.
            shown = await wait_shown(
                term, re.compile(rf"▶ {run_id} +running +local +step \d+/3000  eta \d"), 60
            )
            shown = await term.wait_for(f"System of run {run_id} on local")
            # CPU use is a share between two samples: the job's sampler takes one every 10 s.
            shown = await wait_shown(term, re.compile(r"^  cpu +\[[█░]{12}\] +\d+%"))
            assert_fits(shown, 80, 24)
            lines = shown.splitlines()
            assert any(line.startswith(f"Loss of run {run_id}  last ") for line in lines)
            plot = chart_rows(shown)
            assert len(plot) >= 6
            assert re.match(r"^ +[\d.]+┤", plot[0]) and re.match(r"^ +[\d.]+┤", plot[-1])
            assert any(re.match(r"^ +└1─+\d+ *$", line) for line in lines)  # the step range
            gauges = {m.group(1): line for line in lines if (m := GAUGE.match(line))}
            assert {"cpu", "mem", "disk"} <= set(gauges)
            assert re.search(r"[▁▂▃▄▅▆▇█]{2}$", gauges["mem"])  # two samples: its history
            # A larger terminal gives the chart the rows it gained.
            await term.tmux("resize-window", "-t", "main", "-x", "120", "-y", "40")
            shown = await wait_shown(term, re.compile(r"^ {6,}[\d.]+┤.{100,}"))
            assert_fits(shown, 120, 40)
            assert len(chart_rows(shown)) >= len(plot) + 10
            await term.keys("q")
            await term.wait_for("work is running: quit and stop it? y/n")
            await term.keys("y")
            shown = await term.wait_for("EXIT=", limit=30)
        assert "EXIT=0" in shown
    finally:
        train_helpers.kill_jobs(root)


async def test_with_no_run_followed_the_panel_shows_this_machine(tmp_path: Path) -> None:
    root = train_helpers.make_project(tmp_path / "p")
    async with open_terminal(root, "tui", size=(80, 24)) as term:
        await term.wait_for("nothing run yet")
        await term.keys("4")
        await term.wait_for("System of this machine")
        shown = await wait_shown(term, re.compile(r"^  mem +\[[█░]{12}\] +\d+%"))
        assert_fits(shown, 80, 24)
        assert "no loss yet (shown while a run is followed: t or a)" in shown
        assert re.search(rf"^  disk +\[[█░]{{12}}\] +\d+% .* {re.escape('/')}", shown, re.M)
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown
