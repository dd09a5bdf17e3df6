"""`overbrainer tui`: checks the terminal, sends logs to the Logs view, holds the lock, runs."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator
from typing import TextIO

import attrs
import trio

from overbrainer.config import load_settings
from overbrainer.config.errors import ConfigError
from overbrainer.flows.setup import CommandOptions
from overbrainer.metrics.endpoint import open_metrics
from overbrainer.metrics.observer import MetricsObserver
from overbrainer.model.errors import EXIT_INTERRUPTED, UsageError
from overbrainer.project.directory import Project, find_root, open_project, project_lock
from overbrainer.ui.logs import LogBuffer, LogMode, init_logging
from overbrainer.ui.tui.loop import Runner
from overbrainer.ui.tui.render import MIN_COLS, MIN_ROWS
from overbrainer.ui.tui.state import View
from overbrainer.ui.tui.typeahead import TypeAhead, keep_typeahead
from overbrainer.ui.tui.wizard_files import existing_files
from overbrainer.ui.tui.wizard_loop import WizardRunner

log = logging.getLogger(__name__)

NOT_A_TTY = "overbrainer tui needs a terminal: stdout is not a TTY"
STDIN_NOT_A_TTY = "overbrainer tui needs a terminal: stdin is not a TTY"


def check_terminal(stdout: TextIO, stdin: TextIO) -> None:
    """Refuse a stdout or stdin that is not a terminal, or one smaller than 80x24 (UsageError)."""
    if not stdout.isatty():
        raise UsageError(NOT_A_TTY)
    if not stdin.isatty():
        raise UsageError(STDIN_NOT_A_TTY)
    size = os.get_terminal_size(stdout.fileno())
    if size.columns < MIN_COLS or size.lines < MIN_ROWS:
        raise UsageError(
            f"overbrainer tui needs a terminal of at least {MIN_COLS}x{MIN_ROWS}: "
            f"this one is {size.columns}x{size.lines}"
        )


async def tui_flow(options: CommandOptions, stdout: TextIO, stdin: TextIO) -> int:
    """Run the TUI on the project of `options` until the user quits; the exit code.

    Without a project there, the init wizard writes one first (Ctrl-C in it: exit 130,
    nothing written).
    """
    check_terminal(stdout, stdin)
    with keep_typeahead(stdin.fileno()) as typeahead:
        return await _run(options, stdout, typeahead)


async def _run(options: CommandOptions, stdout: TextIO, typeahead: TypeAhead) -> int:
    buffer = LogBuffer()
    # From here on log lines would draw over the screen: they go to the Logs view.
    init_logging(LogMode.TUI, buffer=buffer, force=True)
    root = options.project_dir
    view, auto = View.PIPELINE, False
    if not Project(find_root(root)).config.is_file():
        existing = existing_files(root)
        if existing:
            raise UsageError(f"{existing[0]} already exists: the wizard never overwrites a file")
        started = await WizardRunner(root, typeahead=typeahead).run()
        if started is None:
            return EXIT_INTERRUPTED
        view, auto = (View.PIPELINE, True) if started else (View.PROJECT, False)
    project = open_project(root)
    with project_lock(project):
        held = attrs.evolve(options, lock_held=True)
        async with _serve_metrics(project) as metrics:
            runner = Runner(
                project, held, buffer, view, auto=auto, typeahead=typeahead, metrics=metrics
            )
            code = await runner.run()
    for note in runner.state.notes:
        stdout.write(note + "\n")
    return code


@contextlib.asynccontextmanager
async def _serve_metrics(project: Project) -> AsyncIterator[MetricsObserver | None]:
    """The project's metrics, served on `[metrics] listen` for as long as the TUI holds the
    project (read at its start); None when unset, not bindable, or the config is invalid."""
    try:
        settings = await trio.to_thread.run_sync(load_settings, project.root, dict(os.environ))
    except ConfigError as error:
        log.warning("no metrics: %s", error.message)
        yield None
        return
    async with open_metrics(settings, project) as serving:
        yield serving.observer
