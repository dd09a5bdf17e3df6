"""The live bar on a fake terminal: its text, its refresh task, and log lines above it."""

from __future__ import annotations

import io
import logging
import re
import threading
from collections.abc import Iterator

import pytest
import trio
from rich.console import Console

from overbrainer.events.types import (
    ConcurrencyChanged,
    ItemDone,
    ItemFailed,
    Stage,
    StageFinished,
    StageStarted,
    StageStats,
)
from overbrainer.model.usage import Usage
from overbrainer.ui.bar import BarScreen, StageTally
from overbrainer.ui.display import Display, choose_display
from overbrainer.ui.front import CliFrontend
from overbrainer.ui.logs import init_logging, reset_logging
from overbrainer.ui.progress import rate_words


@pytest.fixture(autouse=True)
def _fresh_logging() -> Iterator[None]:
    """Each test installs its own handler; the root logger's level is put back after."""
    root = logging.getLogger()
    level = root.level
    reset_logging()
    yield
    reset_logging()
    root.setLevel(level)


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def fake_terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(force_terminal=True, file=out, width=100, color_system=None), out


def plain(out: io.StringIO) -> str:
    return ANSI.sub("", out.getvalue())


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_display_is_a_bar_only_on_a_terminal_that_allows_it() -> None:
    tty, pipe = FakeTty(), io.StringIO()
    assert choose_display(False, tty, {"TERM": "xterm"}) is Display.BAR
    assert choose_display(False, pipe, {"TERM": "xterm"}) is Display.LINES
    assert choose_display(False, tty, {"TERM": "dumb"}) is Display.LINES
    assert choose_display(False, tty, {"NO_COLOR": "1"}) is Display.LINES
    assert choose_display(True, tty, {}) is Display.QUIET


def test_the_bar_shows_counts_rate_eta_tokens_spend_failures_and_retries() -> None:
    now = [100.0]
    console, out = fake_terminal()
    screen = BarScreen(console, clock=lambda: now[0])
    a = Stage.ANSWERS
    screen.event(1, StageStarted(a, 10))
    screen.event(1, ItemDone(a, "old"))  # stored already: skipped, not in the rate
    for n in range(4):
        now[0] += 1.0
        screen.event(1, ItemDone(a, f"q{n}", Usage(100, 50), 0.2))
    screen.event(1, ItemFailed(a, "q4", "HTTP 429: rate limited; retrying in 2s", retryable=True))
    screen.event(1, ItemFailed(a, "q5", "HTTP 400: bad request"))
    now[0] += 1.0
    screen.tick()
    frame = plain(out)
    # 6 of 10 ended, 5 by requests in 5 s: 1.0/s, 4 left: 4 s.
    assert "answers" in frame
    assert "6/10 answers  1.0/s, ETA 4s" in frame
    assert "tokens 400 in, 200 out · $0.8000 · 1 failed · 1 retry · 1 skipped" in frame
    assert "━" in frame
    screen.event(1, ConcurrencyChanged("stub/parent", 8, 6, "rate limited"))
    screen.tick()
    assert "1 skipped · concurrency 6" in plain(out)
    screen.event(1, StageFinished(a, StageStats()))
    screen.tick()
    assert screen.live is None
    assert "6/10 answers  1.0/s, took 5s" in plain(out)


def test_a_stage_making_another_kind_of_record_shows_both_units() -> None:
    tally = StageTally(Stage.QUESTIONS, 10, 0.0)
    for n in range(10):
        tally.apply(ItemDone(Stage.QUESTIONS, f"s{n}", Usage(20, 10), None, written=30))
    assert tally.count_words() == "10/10 subtopics → 300 questions"
    assert tally.spend_words() == "tokens 200 in, 100 out · cost unknown · 0 failed · 0 retries"
    topics = StageTally(Stage.SUBTOPICS, 2, 0.0)
    topics.apply(ItemDone(Stage.SUBTOPICS, "ownership", Usage(200, 100), 0.0003, written=5))
    assert topics.count_words() == "1/2 topics → 5 subtopics"
    assert topics.time_words(0.0) == "–/s, ETA –"
    assert [rate_words(r) for r in (2.45, 0.05)] == ["2.5/s", "3.0/min"]


async def test_the_bar_is_refreshed_by_a_trio_task_and_no_thread(
    autojump_clock: trio.testing.MockClock,
) -> None:
    console, out = fake_terminal()
    threads = threading.active_count()
    front = CliFrontend(Display.BAR, console)
    a = Stage.ANSWERS
    with trio.fail_after(60):
        async with front.open_bus() as bus:
            bus.publish(StageStarted(a, 4))
            for n in range(4):
                await trio.sleep(0.5)
                bus.publish(ItemDone(a, f"q{n}", Usage(10, 5), 0.01))
                assert threading.active_count() == threads
            assert front._screen is not None and front._screen.live is not None
            assert front._screen.live.auto_refresh is False
            frames = plain(out)
            assert "1/4 answers" in frames and "ETA" in frames
            bus.publish(StageFinished(a, StageStats()))
            front.line("answers: the summary")
    assert threading.active_count() == threads
    text = plain(out)
    assert "4/4 answers  2.0/s, took 2s" in text
    # The cursor is shown again once the bar stops.
    raw = out.getvalue()
    assert raw.rfind("\x1b[?25h") > raw.rfind("\x1b[?25l") >= 0


async def test_log_lines_print_above_the_live_bar(autojump_clock: trio.testing.MockClock) -> None:
    console, out = fake_terminal()
    stream = io.StringIO()
    init_logging(stream=stream, colour=False, force=True, environ={})
    front = CliFrontend(Display.BAR, console)
    a = Stage.ANSWERS
    with trio.fail_after(60):
        async with front.open_bus() as bus:
            bus.publish(StageStarted(a, 2))
            await trio.sleep(0.3)
            bus.publish(ItemFailed(a, "q1", "HTTP 503: busy; retrying in 1s", retryable=True))
            await trio.sleep(0.3)
            bus.publish(ItemDone(a, "q1", Usage(1, 1), None))
            await trio.sleep(0.3)
    text = plain(out)
    assert "WARN answers: q1: HTTP 503: busy; retrying in 1s" in text
    # Through the bar's console, not past it; and no item lines the bar replaces.
    assert stream.getvalue() == ""
    assert "to process" not in text


def test_quiet_logging_keeps_warnings_and_errors_only(caplog: pytest.LogCaptureFixture) -> None:
    stream = io.StringIO()
    init_logging(stream=stream, colour=False, force=True, environ={}, quiet=True)
    log = logging.getLogger("overbrainer.test")
    log.info("answers: 10 to process")
    log.warning("answers: q1: slow")
    log.error("answers: q2 failed: boom")
    lines = [line.split(" ", 1)[1].strip() for line in stream.getvalue().splitlines()]
    assert lines == ["WARN answers: q1: slow", "ERROR answers: q2 failed: boom"]


async def test_a_bus_without_a_stage_draws_nothing() -> None:
    console, out = fake_terminal()
    with trio.fail_after(5):
        async with CliFrontend(Display.BAR, console).open_bus():
            pass
    assert out.getvalue() == ""


def test_an_unused_screen_freezes_quietly() -> None:
    console, out = fake_terminal()
    BarScreen(console).freeze()
    assert out.getvalue() == ""
