"""How the CLI shows progress: a live bar on a terminal, log lines otherwise, or only warnings."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TextIO


class Display(enum.Enum):
    """The CLI's progress display."""

    LINES = "lines"
    """The reference's log lines (stderr is not a terminal, or `NO_COLOR`/`TERM=dumb`)."""
    BAR = "bar"
    """A live bar per stage on stderr, log lines printed above it."""
    QUIET = "quiet"
    """`-q`: warnings, errors and the stdout summary lines only."""


def choose_display(quiet: bool, stream: TextIO, environ: Mapping[str, str]) -> Display:
    """The display for `stream` (stderr): quiet if asked, a bar on a terminal that allows it."""
    if quiet:
        return Display.QUIET
    if "NO_COLOR" in environ or environ.get("TERM") == "dumb":
        return Display.LINES
    isatty = getattr(stream, "isatty", None)
    try:
        terminal = bool(isatty is not None and isatty())
    except ValueError:  # a closed stream
        terminal = False
    return Display.BAR if terminal else Display.LINES
