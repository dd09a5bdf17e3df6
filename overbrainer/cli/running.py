"""Run one command's Trio flow and turn its outcome into an exit code."""

from __future__ import annotations

import gc
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import NoReturn

import click
import trio

from overbrainer.model.errors import EXIT_INTERRUPTED, EXIT_OK, OverbrainerError

log = logging.getLogger(__name__)


def _single_error(group: BaseExceptionGroup[BaseException]) -> OverbrainerError | None:
    errors = [e for e in _leaves(group) if isinstance(e, OverbrainerError)]
    return errors[0] if errors else None


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def run_flow(flow: Callable[[], Awaitable[int | None]]) -> NoReturn:
    """Run `flow` under `trio.run` and exit: its code, 130 on Ctrl-C, the error's code on error."""
    code = EXIT_OK
    # Everything imported so far lives as long as the process: moving it out of the cycle
    # collector's reach spares every full collection a scan of tens of thousands of objects.
    gc.freeze()
    try:
        result = trio.run(flow)
        code = EXIT_OK if result is None else result
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    except OverbrainerError as error:
        code = _report(error)
    except BaseExceptionGroup as group:
        leaves = _leaves(group)
        if any(isinstance(e, KeyboardInterrupt) for e in leaves):
            code = EXIT_INTERRUPTED
        elif any(isinstance(e, BrokenPipeError) for e in leaves):
            raise BrokenPipeError() from None  # stdout's reader went away: main() ends quietly
        elif (found := _single_error(group)) is not None:
            code = _report(found)
        else:
            raise
    finally:
        # For a caller that goes on after the command (a test running it in-process).
        gc.unfreeze()
    sys.stdout.flush()
    sys.exit(code)


def _report(error: OverbrainerError) -> int:
    # An interruption is not an error: its line (e.g. «interrupted: the stage resumes on its
    # next run») is printed as is.
    prefix = "" if error.exit_code == EXIT_INTERRUPTED else "error: "
    click.echo(f"{prefix}{error.message}", err=True)
    return error.exit_code
