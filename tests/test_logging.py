"""Log lines on stderr, the OVERBRAINER_LOG filter, NO_COLOR, and the TUI's line ring."""

from __future__ import annotations

import io
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from overbrainer.logs import (
    LOG_LINES,
    LogBuffer,
    LogLine,
    LogMode,
    init_logging,
    reset_logging,
)

LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z (ERROR| WARN| INFO|DEBUG) (.*)$")


@pytest.fixture
def restore_root() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    reset_logging()
    root.handlers[:] = handlers
    root.setLevel(level)


def emit(environ: dict[str, str], colour: bool | None = None) -> list[str]:
    stream = io.StringIO()
    init_logging(environ=environ, stream=stream, colour=colour, force=True)
    logging.getLogger("overbrainer.pipeline").info("answers: 2/20")
    logging.getLogger("overbrainer.pipeline").debug("answers: q1 done")
    logging.getLogger("httpx2").info("dependency chatter")
    logging.getLogger("httpx2").warning("dependency trouble")
    logging.getLogger("overbrainer.llm").warning("retrying", extra={"fields": {"attempt": 2}})
    reset_logging()
    return stream.getvalue().splitlines()


def message(text: str) -> str:
    match = LINE.match(text)
    assert match is not None, text
    return match.group(2)


def test_default_filter_shows_ours_at_info_and_dependencies_at_warn(restore_root: None) -> None:
    lines = emit({})
    assert [LINE.match(line).groups() for line in lines] == [  # type: ignore[union-attr]
        (" INFO", "answers: 2/20"),
        (" WARN", "dependency trouble"),
        (" WARN", "retrying attempt=2"),
    ]


def test_overbrainer_log_directives(restore_root: None) -> None:
    assert len(emit({"OVERBRAINER_LOG": "debug"})) == 5
    ours = emit({"OVERBRAINER_LOG": "overbrainer=debug"})
    assert [message(line) for line in ours] == [
        "answers: 2/20",
        "answers: q1 done",
        "retrying attempt=2",
    ]
    assert emit({"OVERBRAINER_LOG": "overbrainer=error"}) == []
    assert len(emit({"OVERBRAINER_LOG": "not a=valid=filter"})) == 3


def test_colour_only_when_asked_and_never_with_no_color(restore_root: None) -> None:
    assert all("\x1b[" in line for line in emit({}, colour=True))
    assert not any("\x1b[" in line for line in emit({}, colour=None))
    stream = io.StringIO()
    stream.isatty = lambda: True  # type: ignore[method-assign]
    init_logging(environ={"NO_COLOR": ""}, stream=stream, force=True)
    logging.getLogger("overbrainer").warning("plain")
    reset_logging()
    assert "\x1b[" not in stream.getvalue()


def test_the_command_line_logs_to_stderr_in_the_reference_format(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    result = subprocess.run(
        [sys.executable, "-m", "overbrainer", "-C", str(tmp_path), "init"],
        capture_output=True,
        text=True,
        env={**env, "NO_COLOR": "1"},
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 8
    assert all(LINE.match(x) for x in lines), lines
    assert message(lines[0]) == f"created {tmp_path / 'overbrainer.toml'}"
    assert "\x1b[" not in result.stderr
    assert result.stdout.startswith("next: ")


def test_tui_mode_sends_lines_to_the_buffer(restore_root: None) -> None:
    buffer = LogBuffer(3)
    init_logging(LogMode.TUI, environ={}, buffer=buffer, force=True)
    for n in range(5):
        logging.getLogger("overbrainer.x").info("line %d", n)
    reset_logging()
    assert [line.message for line in buffer.window(logging.INFO, 10, 0).lines] == [
        "line 2",
        "line 3",
        "line 4",
    ]
    assert buffer.seq() == 5
    assert [line.seq for line in buffer.since(logging.INFO, 3)] == [4, 5]


def line(level: int, n: int) -> LogLine:
    return LogLine(level=level, target="overbrainer", time=0.0, message=str(n))


def test_buffer_keeps_the_newest_lines_and_numbers_them_from_one() -> None:
    assert LogBuffer().capacity == LOG_LINES == 5000
    assert LogBuffer(0).capacity == 1
    buffer = LogBuffer(4)
    for n in range(6):
        buffer.push(line(logging.INFO, n))
    kept = buffer.window(logging.DEBUG, 10, 0)
    assert [(x.seq, x.message) for x in kept.lines] == [(3, "2"), (4, "3"), (5, "4"), (6, "5")]
    assert kept.matching == 4


def test_window_arithmetic_follows_the_reference() -> None:
    buffer = LogBuffer(100)
    for n in range(10):
        buffer.push(line(logging.WARNING if n % 2 else logging.INFO, n))

    def messages(min_level: int, count: int, offset: int) -> list[str]:
        return [x.message for x in buffer.window(min_level, count, offset).lines]

    assert messages(logging.INFO, 3, 0) == ["7", "8", "9"]
    assert messages(logging.INFO, 3, 2) == ["5", "6", "7"]
    # past the top the window stays full: end = max(len - offset, min(count, len))
    assert messages(logging.INFO, 3, 50) == ["0", "1", "2"]
    assert messages(logging.INFO, 20, 0) == [str(n) for n in range(10)]
    assert messages(logging.WARNING, 2, 1) == ["5", "7"]
    assert buffer.window(logging.WARNING, 2, 1).matching == 5
    assert buffer.newer(logging.WARNING, 6) == 2
    assert [x.message for x in buffer.since(logging.INFO, 8)] == ["8", "9"]
    latest = buffer.latest(logging.WARNING)
    assert latest is not None and latest.message == "9"
    assert buffer.latest(logging.ERROR) is None
