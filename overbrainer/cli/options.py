"""The CLI front end a command runs with, honouring the global `--events FILE` flag."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import click

from overbrainer.model.errors import UsageError
from overbrainer.ui.front import CliFrontend

EVENTS_FILE_KEY = "overbrainer.events_file"


def events_file() -> Path | None:
    """The `--events FILE` of the running command, if given."""
    path = click.get_current_context().meta.get(EVENTS_FILE_KEY)
    assert path is None or isinstance(path, Path)
    return path


@contextlib.contextmanager
def cli_frontend(events: Path | None = None) -> Iterator[CliFrontend]:
    """A CliFrontend whose buses also write every event to `events` as JSON lines."""
    if events is None:
        yield CliFrontend()
        return
    # Imported on use: its converter costs every other command's start-up for nothing.
    from overbrainer.events.codec import JsonlObserver

    try:
        observer = JsonlObserver(events)
    except OSError as error:
        raise UsageError(f"cannot open the events file {events}: {error.strerror}") from None
    with observer:
        yield CliFrontend(observer)
