"""One setup for every command: project, events file, lock, interrupt, settings, metrics, bus."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from overbrainer.config.settings import Settings
from overbrainer.events.bus import EventBus, Observers
from overbrainer.events.frontend import Frontend
from overbrainer.events.interrupt import Interrupt
from overbrainer.flows.config_state import ConfigState
from overbrainer.metrics.endpoint import open_metrics
from overbrainer.model.error_groups import meaningful_error
from overbrainer.model.errors import OverbrainerError, UsageError
from overbrainer.project.directory import Project, open_project, project_lock

if TYPE_CHECKING:
    from overbrainer.events.codec import JsonlObserver


@attrs.frozen
class CommandOptions:
    """The global command-line values a command's setup needs (`-C DIR`, `--events FILE`)."""

    project_dir: Path = Path(".")
    """Where the project search starts (`open_project` walks up from it)."""
    events: Path | None = None
    lock_held: bool = False
    """True when the caller (the TUI) already holds the project lock for this process; it
    then serves the project's metrics too, for as long as it holds the lock."""


@attrs.frozen
class Command:
    """What a command's flow works with once set up."""

    project: Project
    config: ConfigState
    front: Frontend
    bus: EventBus
    interrupt: Interrupt

    @property
    def settings(self) -> Settings:
        """The settings the command runs with (`run` may reload them between stages)."""
        return self.config.settings


@contextlib.contextmanager
def open_events_file(path: Path | None) -> Iterator[JsonlObserver | None]:
    """An observer writing every event to `path` as JSON lines; None without a path.

    A missing parent directory is refused, never created: it is most often a typo.
    """
    if path is None:
        yield None
        return
    if not path.parent.is_dir():
        raise UsageError(
            f"cannot open the events file {path}: directory {path.parent} does not exist"
        )
    # Imported on use: its converter costs every other command's start-up for nothing.
    from overbrainer.events.codec import JsonlObserver

    try:
        observer = JsonlObserver(path)
    except OSError as error:
        raise UsageError(f"cannot open the events file {path}: {error.strerror}") from None
    with observer:
        yield observer


@contextlib.asynccontextmanager
async def _written(events: JsonlObserver | None) -> AsyncIterator[None]:
    """The events file's lines written by a task, off the Trio thread, while inside."""
    if events is None:
        yield
        return
    async with events.writing():
        yield


@contextlib.asynccontextmanager
async def open_command(
    options: CommandOptions, front: Frontend, *, shared: bool = False
) -> AsyncIterator[Command]:
    """Set up one command: project, events file, lock, interrupt, settings, metrics and bus.

    The bus is seen by the events file and the metrics observer. An OverbrainerError raised in
    the block (alone, or the only kind in an exception group) is held until the bus has printed
    every queued line, then raised, so that the progress lines come before the error line.
    Anything else goes out as is. `shared` is for a command that works beside the process
    holding the project (`train cancel`): no lock is taken and no metrics are served (the
    holder serves them); under a caller that holds the lock (the TUI), it serves them.
    """
    project = open_project(options.project_dir)
    failure: OverbrainerError | None = None
    held = shared or options.lock_held
    lock = contextlib.nullcontext() if held else project_lock(project)
    with open_events_file(options.events) as events, lock:
        # The events file's writer (a nursery) opens and closes inside the interrupt: a Ctrl-C
        # while its last lines are written is caught (the exit is 130) instead of raising
        # KeyboardInterrupt where no handler is left, which could stop the writer's exit
        # halfway and leave its nursery open.
        async with front.interrupt() as interrupt, _written(events):
            config = ConfigState(project)
            async with (
                open_metrics(config.settings, project, enabled=not held) as serving,
                front.open_bus(Observers(events, serving.observer)) as bus,
            ):
                try:
                    yield Command(project, config, front, bus, interrupt)
                except OverbrainerError as error:
                    failure = error
                except BaseExceptionGroup as group:
                    failure = single_error(group)
                    if failure is None:
                        raise
    if failure is not None:
        raise failure


def single_error(group: BaseExceptionGroup[BaseException]) -> OverbrainerError | None:
    """The OverbrainerError a group stands for (bugs beside it logged), else None: a bug."""
    found = meaningful_error(group)
    if isinstance(found, KeyboardInterrupt):
        raise found from None  # as its own: what it hid is logged once, here
    return found
