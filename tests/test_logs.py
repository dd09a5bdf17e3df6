"""Tests for the logging layer: line format, OVERBRAINER_LOG filter and the TUI line ring."""

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

from overbrainer.ui import logs
from overbrainer.ui.logs import LogBuffer, LogLine, LogMode, init_logging

LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z (ERROR| WARN| INFO|DEBUG) (.*)$")


@pytest.fixture(autouse=True)
def restore_root() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    logs.reset_logging()
    yield
    logs.reset_logging()
    root.handlers[:] = handlers
    root.setLevel(level)


def capture(environ: dict[str, str], colour: bool | None = None) -> io.StringIO:
    out = io.StringIO()
    init_logging(environ=environ, stream=out, colour=colour, force=True)
    return out


def test_line_format_and_no_colour() -> None:
    out = capture({"NO_COLOR": ""})
    logging.getLogger("overbrainer.pipeline").info("answers: 2/20")
    logging.getLogger("overbrainer.x").warning("slow")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    first, second = (LINE.match(line) for line in lines)
    assert first is not None and first.groups() == (" INFO", "answers: 2/20")
    assert second is not None and second.groups() == (" WARN", "slow")
    assert "\x1b" not in out.getvalue()


def test_not_a_tty_has_no_colour_and_forced_colour_has() -> None:
    out = capture({})
    logging.getLogger("overbrainer").error("plain")
    assert "\x1b" not in out.getvalue()
    out = capture({}, colour=True)
    logging.getLogger("overbrainer").error("red")
    assert "\x1b[31mERROR\x1b[0m red" in out.getvalue()


class Terminal(io.StringIO):
    """A stream that says it is a terminal, so only NO_COLOR can turn colour off."""

    def isatty(self) -> bool:
        return True


def test_no_color_turns_colour_off_on_a_terminal() -> None:
    on_terminal = Terminal()
    init_logging(environ={}, stream=on_terminal, force=True)
    logging.getLogger("overbrainer").warning("coloured")
    assert "\x1b[33m WARN\x1b[0m coloured" in on_terminal.getvalue()
    plain = Terminal()
    init_logging(environ={"NO_COLOR": ""}, stream=plain, force=True)
    logging.getLogger("overbrainer").warning("plain")
    assert plain.getvalue().endswith(" WARN plain\n")
    assert "\x1b[" not in plain.getvalue()


def test_the_command_line_logs_to_stderr_in_this_format(tmp_path: Path) -> None:
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
    # overbrainer.toml, .env.example, five prompts (quality.txt included), .gitignore, version
    assert len(lines) == 9
    matches = [LINE.match(x) for x in lines]
    assert all(matches), lines
    assert matches[0] is not None
    assert matches[0].groups() == (" INFO", f"created {tmp_path / 'overbrainer.toml'}")
    assert f"created {tmp_path / 'prompts' / 'quality.txt'}" in result.stderr
    assert "\x1b[" not in result.stderr
    assert result.stdout.startswith("next: ")


def test_second_init_does_nothing() -> None:
    out = capture({})
    other = io.StringIO()
    init_logging(environ={logs.LOG_ENV: "debug"}, stream=other)
    logging.getLogger("overbrainer").debug("hidden")
    logging.getLogger("overbrainer").info("shown")
    assert other.getvalue() == ""
    assert "shown" in out.getvalue() and "hidden" not in out.getvalue()


def shown(environ: dict[str, str]) -> list[str]:
    out = capture(environ)
    logging.getLogger("overbrainer.llm").debug("ob debug")
    logging.getLogger("overbrainer.llm").info("ob info")
    logging.getLogger("httpx2").info("dep info")
    logging.getLogger("httpx2").warning("dep warn")
    logging.getLogger("httpx2").debug("dep debug")
    return [m.group(2) for m in map(LINE.match, out.getvalue().splitlines()) if m]


def test_default_filter() -> None:
    assert shown({}) == ["ob info", "dep warn"]


def test_invalid_falls_back_to_default() -> None:
    assert shown({logs.LOG_ENV: "overbrainer=loud"}) == ["ob info", "dep warn"]
    assert shown({logs.LOG_ENV: ""}) == ["ob info", "dep warn"]


def test_debug_everywhere() -> None:
    assert shown({logs.LOG_ENV: "debug"}) == [
        "ob debug",
        "ob info",
        "dep info",
        "dep warn",
        "dep debug",
    ]


def test_target_directives_longest_prefix() -> None:
    assert shown({logs.LOG_ENV: "overbrainer=debug"}) == ["ob debug", "ob info"]
    env = {logs.LOG_ENV: "overbrainer=debug,overbrainer.llm=warn,httpx2=debug,error"}
    assert shown(env) == ["dep info", "dep warn", "dep debug"]


def test_http_libraries_make_no_record_unless_asked_for_one() -> None:
    capture({})
    assert not logging.getLogger("httpx2").isEnabledFor(logging.INFO)
    assert logging.getLogger("httpx2").isEnabledFor(logging.WARNING)
    assert not logging.getLogger("httpcore2.connection").isEnabledFor(logging.DEBUG)
    capture({logs.LOG_ENV: "warn,httpx2.sub=debug"})
    assert logging.getLogger("httpx2.sub").isEnabledFor(logging.DEBUG)
    capture({logs.LOG_ENV: "debug"})
    assert logging.getLogger("httpcore2.connection").isEnabledFor(logging.DEBUG)
    logs.reset_logging()
    assert logging.getLogger("httpx2").level == logging.NOTSET


def test_parse_filter() -> None:
    parsed = logs.parse_filter("overbrainer=info,warn")
    assert parsed is not None
    assert parsed.threshold("overbrainer.llm.openai") == logging.INFO
    assert parsed.threshold("overbrainerx") == logging.WARNING
    assert parsed.threshold("httpx2") == logging.WARNING
    assert logs.parse_filter("a=b=c") is None
    off = logs.parse_filter("off")
    assert off is not None and off.threshold("x") > logging.CRITICAL


def test_fields_appended() -> None:
    out = capture({})
    buffer = LogBuffer()
    init_logging(LogMode.TUI, environ={}, buffer=buffer, force=True)
    logging.getLogger("overbrainer").warning("retrying answers", extra={"fields": {"attempt": 2}})
    latest = buffer.latest(logging.DEBUG)
    assert latest is not None
    assert latest.message == "retrying answers attempt=2"
    assert (latest.seq, latest.level, latest.target) == (1, logging.WARNING, "overbrainer")
    assert out.getvalue() == ""


def test_tui_mode_filters_and_skips_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    buffer = LogBuffer()
    init_logging(LogMode.TUI, environ={}, buffer=buffer, force=True)
    logging.getLogger("httpx2").info("dep info")
    logging.getLogger("overbrainer").info("ob info")
    assert [line.message for line in buffer.since(logs.TRACE, 0)] == ["ob info"]
    assert capsys.readouterr().err == ""


def line(level: int, n: int) -> LogLine:
    return LogLine(level=level, target="overbrainer", time=0.0, message=f"m{n}")


def filled(n: int, capacity: int = logs.LOG_LINES) -> LogBuffer:
    buffer = LogBuffer(capacity)
    for i in range(1, n + 1):
        buffer.push(line(logging.WARNING if i % 2 == 0 else logging.INFO, i))
    return buffer


def test_push_numbers_and_drops_oldest() -> None:
    assert logs.LOG_LINES == 5000
    assert LogBuffer(0).capacity == 1
    buffer = filled(5, capacity=3)
    assert buffer.seq() == 5
    assert [(x.seq, x.message) for x in buffer.since(0, 0)] == [(3, "m3"), (4, "m4"), (5, "m5")]


def messages(buffer: LogBuffer, min_level: int, count: int, offset: int) -> list[str]:
    return [x.message for x in buffer.window(min_level, count, offset).lines]


def test_window_arithmetic() -> None:
    buffer = filled(10)
    # len 10: end = max(10 - offset, min(count, 10)), start = max(end - count, 0)
    assert messages(buffer, 0, 3, 0) == ["m8", "m9", "m10"]
    assert messages(buffer, 0, 3, 2) == ["m6", "m7", "m8"]
    assert messages(buffer, 0, 3, 9) == ["m1", "m2", "m3"]  # end = max(1, 3) = 3
    assert messages(buffer, 0, 3, 50) == ["m1", "m2", "m3"]
    assert messages(buffer, 0, 20, 0) == [f"m{i}" for i in range(1, 11)]
    assert messages(buffer, 0, 20, 4) == [f"m{i}" for i in range(1, 11)]  # end = max(6, 10)
    assert messages(buffer, 0, 0, 0) == []
    warn = buffer.window(logging.WARNING, 2, 1)  # the 5 warnings m2..m10: end 4, start 2
    assert [x.message for x in warn.lines] == ["m6", "m8"]
    assert warn.matching == 5
    assert buffer.window(logging.ERROR, 3, 0) == logs.Window(lines=(), matching=0)


def test_newer_since_latest() -> None:
    buffer = filled(6)
    assert buffer.newer(0, 3) == 3
    assert buffer.newer(logging.WARNING, 3) == 2
    assert [x.seq for x in buffer.since(logging.WARNING, 3)] == [4, 6]
    assert buffer.since(0, 6) == []
    latest = buffer.latest(0)
    assert latest is not None and latest.seq == 6
    buffer.push(line(logging.INFO, 7))
    latest_warn = buffer.latest(logging.WARNING)
    assert latest_warn is not None and latest_warn.seq == 6
    assert buffer.latest(logging.ERROR) is None
