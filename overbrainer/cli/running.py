"""Run one command's Trio flow and turn its outcome into an exit code."""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import NoReturn

import click

from overbrainer.cli.context import json_report
from overbrainer.events.stop_signals import note_stop_signals
from overbrainer.model.errors import EXIT_INTERRUPTED, EXIT_OK, OverbrainerError
from overbrainer.model.redact import redact

log = logging.getLogger(__name__)


def register_target_kinds() -> None:
    """The target kinds, which register their `[targets.<n>]` settings with config."""
    from overbrainer.targets import ensure_kinds

    ensure_kinds()


def run_flow(flow: Callable[[], Awaitable[int | None]]) -> NoReturn:
    """Run `flow` under `trio.run` and exit: its code, 130 on Ctrl-C, the error's code on error."""
    # Imported here, not at the top: command modules import this one to define their commands,
    # which `--help` and completion do without running any.
    import trio

    from overbrainer.config.target_settings import load_kinds_on_use
    from overbrainer.model.error_groups import error_leaves, meaningful_error

    load_kinds_on_use(register_target_kinds)
    report = json_report()
    outcome = _Outcome()
    if threading.current_thread() is threading.main_thread():
        # Trio guards its own state against KeyboardInterrupt only under the default handler
        # (the entry kept a quiet «exit 130» one while the command line was read).
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # With `--json` stdout holds the document alone: whatever the flow prints goes to stderr.
    printed = contextlib.redirect_stdout(sys.stderr) if report else contextlib.nullcontext()
    try:
        try:
            with printed:
                result = trio.run(flow)
        finally:
            # Trio put the default handler back: a Ctrl-C from here on is only noted, and the
            # entry exits 130 (a KeyboardInterrupt now could escape into the interpreter's end).
            note_stop_signals()
        outcome.code = EXIT_OK if result is None else result
    except KeyboardInterrupt as error:
        outcome.interrupted(error)
    except OverbrainerError as error:
        outcome.failed(error)
    except BaseExceptionGroup as group:
        leaves = error_leaves(group)
        if any(isinstance(e, BrokenPipeError) for e in leaves) and not any(
            isinstance(e, KeyboardInterrupt) for e in leaves
        ):
            raise BrokenPipeError() from None  # stdout's reader went away: main() ends quietly
        found = meaningful_error(group)
        if found is None:
            raise
        if isinstance(found, KeyboardInterrupt):
            outcome.interrupted(found)
        else:
            outcome.failed(found)
    if report is not None:
        click.echo(report.render(outcome.code, outcome.error))
    sys.stdout.flush()
    sys.exit(outcome.code)


class _Outcome:
    """How the flow ended: its exit code and, for `--json`, its error line."""

    def __init__(self) -> None:
        self.code = EXIT_OK
        self.error: str | None = None

    def interrupted(self, error: KeyboardInterrupt) -> None:
        """130, after the line of the flow's own error that a Ctrl-C came during (a signal
        Trio had queued when the orderly exit began lands as KeyboardInterrupt there)."""
        seen: BaseException | None = error.__context__
        visited: set[int] = set()
        while seen is not None and id(seen) not in visited:
            if isinstance(seen, OverbrainerError):
                self.failed(seen)
                break
            visited.add(id(seen))
            seen = seen.__context__
        self.code = EXIT_INTERRUPTED
        if self.error is None:
            self.error = "interrupted"

    def failed(self, error: OverbrainerError) -> None:
        """The error's line on stderr and its exit code."""
        # An interruption is not an error: its line (e.g. «interrupted: the stage resumes on
        # its next run») is printed as is.
        prefix = "" if error.exit_code == EXIT_INTERRUPTED else "error: "
        click.echo(redact(f"{prefix}{error.message}"), err=True)
        self.code = error.exit_code
        self.error = redact(error.message)
