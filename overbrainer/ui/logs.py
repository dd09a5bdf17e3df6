"""Logging setup: an `OVERBRAINER_LOG` filter, a stderr line format and the TUI's line ring."""

from __future__ import annotations

import collections
import datetime
import enum
import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Mapping
from typing import TextIO

import attrs

from overbrainer.model.redact import redact

LOG_ENV = "OVERBRAINER_LOG"
DEFAULT_FILTER = "overbrainer=info,warn"
LOG_LINES = 5000
TRACE = 5
"""Below DEBUG, for the `trace` directive; logging has no such level of its own."""

_OFF = logging.CRITICAL + 10
PER_REQUEST_LOGGERS = ("httpx2", "httpcore2")
"""Libraries that log each HTTP request: kept from even making a record the filter drops."""
_LEVELS: dict[str, int] = {
    "off": _OFF,
    "error": logging.ERROR,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "info": logging.INFO,
    "debug": logging.DEBUG,
    "trace": TRACE,
    # env-filter also takes the numeric forms 0 (off) to 5 (trace)
    "0": _OFF,
    "1": logging.ERROR,
    "2": logging.WARNING,
    "3": logging.INFO,
    "4": logging.DEBUG,
    "5": TRACE,
}
_TARGET = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*(\.[A-Za-z_][A-Za-z0-9_\-]*)*")
_COLOURS = {"ERROR": "31", "WARN": "33", "INFO": "32", "DEBUG": "34", "TRACE": "35"}


class LogMode(enum.Enum):
    """Where log lines go: stderr for every command, the TUI's buffer for `tui`."""

    STDERR = "stderr"
    TUI = "tui"


def level_name(levelno: int) -> str:
    """The reference's level word for a logging level (WARNING reads WARN)."""
    if levelno >= logging.ERROR:
        return "ERROR"
    if levelno >= logging.WARNING:
        return "WARN"
    if levelno >= logging.INFO:
        return "INFO"
    if levelno >= logging.DEBUG:
        return "DEBUG"
    return "TRACE"


@attrs.frozen
class Directives:
    """A parsed filter: a default threshold and per-logger-prefix thresholds."""

    default: int
    targets: tuple[tuple[str, int], ...]

    def threshold(self, name: str) -> int:
        """The lowest level shown for a logger, from its longest matching prefix."""
        best = -1
        level = self.default
        for target, target_level in self.targets:
            if (name == target or name.startswith(target + ".")) and len(target) > best:
                best = len(target)
                level = target_level
        return level

    def lowest(self) -> int:
        """The lowest threshold of all, so the root logger lets those records be made."""
        return min([self.default, *(level for _, level in self.targets)])

    def lowest_under(self, name: str) -> int:
        """The lowest threshold of `name` and of the loggers below it."""
        below = [level for target, level in self.targets if target.startswith(name + ".")]
        return min([self.threshold(name), *below])


def parse_filter(text: str) -> Directives | None:
    """Parse env-filter-like directives (`debug`, `overbrainer=debug,warn`); None if invalid."""
    default = _OFF
    targets: dict[str, int] = {}
    parts = [part.strip() for part in text.split(",")]
    if not any(parts):
        return None
    for part in parts:
        if not part:
            continue
        target, sep, level_word = part.partition("=")
        target = target.strip().replace("::", ".")
        if not sep:
            level = _LEVELS.get(target.lower())
            if level is not None:
                default = level
                continue
            # a bare target enables everything under it, as env-filter does
            level_word = "trace"
        level = _LEVELS.get(level_word.strip().lower())
        if level is None or not _TARGET.fullmatch(target):
            return None
        targets[target] = level
    return Directives(default=default, targets=tuple(targets.items()))


def filter_from_env(environ: Mapping[str, str]) -> Directives:
    """The filter `OVERBRAINER_LOG` asks for, or the default when unset or invalid."""
    parsed = parse_filter(environ.get(LOG_ENV, ""))
    if parsed is not None:
        return parsed
    default = parse_filter(DEFAULT_FILTER)
    assert default is not None
    return default


class DirectiveFilter(logging.Filter):
    """A handler filter that lets a record through when its logger's threshold allows it."""

    def __init__(self, directives: Directives) -> None:
        super().__init__()
        self.directives = directives

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether the record is at or above its logger's threshold."""
        return record.levelno >= self.directives.threshold(record.name)


def record_message(record: logging.LogRecord) -> str:
    """The message, then each `extra={"fields": {...}}` entry as ` key=value`."""
    message = record.getMessage()
    fields = getattr(record, "fields", None)
    if isinstance(fields, Mapping):
        message += "".join(f" {key}={value}" for key, value in fields.items())
    return message


class LineFormatter(logging.Formatter):
    """`<RFC3339 UTC time, microseconds>Z <LEVEL:>5> <message>`, the level coloured if asked.

    Known secrets are masked in the whole text, the traceback included.
    """

    def __init__(self, colour: bool) -> None:
        super().__init__()
        self.colour = colour

    def format(self, record: logging.LogRecord) -> str:
        """One line for the record, with a traceback below it if one is attached."""
        at = datetime.datetime.fromtimestamp(record.created, tz=datetime.UTC)
        name = level_name(record.levelno)
        level = f"{name:>5}"
        if self.colour:
            level = f"\x1b[{_COLOURS[name]}m{level}\x1b[0m"
        line = f"{at.strftime('%Y-%m-%dT%H:%M:%S.%f')}Z {level} {record_message(record)}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        if record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return redact(line)


@attrs.frozen(kw_only=True)
class LogLine:
    """One log line the TUI keeps; `seq` is given by the buffer it is pushed into."""

    seq: int = 0
    level: int
    target: str
    time: float
    message: str


@attrs.frozen
class Window:
    """A slice of the kept lines (oldest first) and how many lines matched the level."""

    lines: tuple[LogLine, ...]
    matching: int


class LogBuffer:
    """A shared ring of the last `capacity` lines, numbered 1, 2, … over all lines pushed."""

    def __init__(self, capacity: int = LOG_LINES) -> None:
        self._lines: collections.deque[LogLine] = collections.deque(maxlen=max(capacity, 1))
        self._seq = 0
        # log calls can come from worker threads (trio.to_thread) while the TUI reads
        self._lock = threading.Lock()

    @property
    def capacity(self) -> int:
        """How many lines the ring keeps."""
        maxlen = self._lines.maxlen
        assert maxlen is not None
        return maxlen

    def push(self, line: LogLine) -> LogLine:
        """Number the line, keep it (dropping the oldest when full) and return it numbered."""
        with self._lock:
            self._seq += 1
            numbered = attrs.evolve(line, seq=self._seq)
            self._lines.append(numbered)
        return numbered

    def seq(self) -> int:
        """How many lines were pushed so far."""
        with self._lock:
            return self._seq

    def _matching(self, min_level: int) -> list[LogLine]:
        with self._lock:
            return [line for line in self._lines if line.level >= min_level]

    def window(self, min_level: int, count: int, offset: int) -> Window:
        """`count` matching lines ending `offset` before the newest, kept full near the top."""
        lines = self._matching(min_level)
        length = len(lines)
        end = max(length - offset, min(count, length))
        start = max(end - count, 0)
        return Window(lines=tuple(lines[start:end]), matching=length)

    def newer(self, min_level: int, seq: int) -> int:
        """How many kept matching lines came after `seq`."""
        return len(self.since(min_level, seq))

    def since(self, min_level: int, seq: int) -> list[LogLine]:
        """The kept matching lines that came after `seq`, oldest first."""
        return [line for line in self._matching(min_level) if line.seq > seq]

    def latest(self, min_level: int) -> LogLine | None:
        """The newest kept matching line, if any."""
        lines = self._matching(min_level)
        return lines[-1] if lines else None


class BufferHandler(logging.Handler):
    """A handler that pushes each record into a LogBuffer instead of writing it."""

    def __init__(self, buffer: LogBuffer) -> None:
        super().__init__()
        self.buffer = buffer

    def emit(self, record: logging.LogRecord) -> None:
        """Push the record as a LogLine."""
        try:
            self.buffer.push(
                LogLine(
                    level=record.levelno,
                    target=record.name,
                    time=record.created,
                    message=redact(record_message(record)),
                )
            )
        except Exception:
            self.handleError(record)


class StderrHandler(logging.StreamHandler[TextIO]):
    """Writes lines to its stream, or hands them to `above` while a live bar holds the screen."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream)
        self.above: Callable[[str], None] | None = None

    def emit(self, record: logging.LogRecord) -> None:
        """Write the record's line, above the bar when one is live."""
        above = self.above
        if above is None:
            super().emit(record)
            return
        try:
            above(self.format(record))
        except Exception:
            self.handleError(record)


def print_above(above: Callable[[str], None] | None) -> None:
    """Route stderr log lines through `above` (a live bar's console), or back to the stream."""
    if isinstance(_installed, StderrHandler):
        _installed.above = above


_installed: logging.Handler | None = None


def init_logging(
    mode: LogMode = LogMode.STDERR,
    *,
    environ: Mapping[str, str] = os.environ,
    stream: TextIO | None = None,
    buffer: LogBuffer | None = None,
    colour: bool | None = None,
    force: bool = False,
    quiet: bool = False,
) -> None:
    """Install the one root handler for `mode`; later calls do nothing unless `force`.

    `colour` None means: colour when the stream is a TTY and `NO_COLOR` is not set.
    TUI mode needs `buffer`. `quiet` (`-q`) keeps warnings and errors only.
    """
    global _installed
    if _installed is not None:
        if not force:
            return
        reset_logging()
    directives = filter_from_env(environ)
    handler: logging.Handler
    if mode is LogMode.TUI:
        if buffer is None:
            raise ValueError("TUI logging needs a LogBuffer")
        handler = BufferHandler(buffer)
    else:
        out = stream if stream is not None else sys.stderr
        if colour is None:
            isatty = getattr(out, "isatty", None)
            colour = "NO_COLOR" not in environ and bool(isatty is not None and isatty())
        handler = StderrHandler(out)
        handler.setFormatter(LineFormatter(colour))
    handler.addFilter(DirectiveFilter(directives))
    if quiet:
        handler.setLevel(logging.WARNING)
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(directives.lowest())
    for name in PER_REQUEST_LOGGERS:
        logging.getLogger(name).setLevel(directives.lowest_under(name))
    _installed = handler


def reset_logging() -> None:
    """Remove the handler `init_logging` installed, so it can install again (for tests)."""
    global _installed
    if _installed is not None:
        logging.getLogger().removeHandler(_installed)
        _installed.close()
        _installed = None
        for name in PER_REQUEST_LOGGERS:
            logging.getLogger(name).setLevel(logging.NOTSET)
