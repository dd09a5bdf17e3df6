"""The console script: the group with every command, and its outcome as an exit code."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import traceback
from types import TracebackType

import click

# Each command module adds its commands to the group when it is imported (see the registry).
from overbrainer.cli.commands_registry import COMMAND_MODULES
from overbrainer.cli.completion import completion_instruction, run_completion
from overbrainer.cli.group import Epilogue, cli
from overbrainer.cli.update_check import finish_check
from overbrainer.model.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from overbrainer.model.redact import redact
from overbrainer.project.directory import PREDATES_HINT
from overbrainer.ui.stdout import silence_stdout


def main() -> None:
    """Entry point of the console script: bad arguments give one `error:` line and exit 2."""
    instruction = completion_instruction(os.environ)
    if instruction is not None:
        sys.exit(run_completion(cli, instruction))
    epilogue = Epilogue()
    sys.excepthook = show_bug
    try:
        _run(epilogue)
    finally:
        # Last on stderr, after the command's own output and error line; the exit code stays.
        if epilogue.update is not None:
            notice = finish_check(epilogue.update)
            if notice is not None:
                with contextlib.suppress(OSError, ValueError):
                    click.echo(notice, err=True)
        if epilogue.hint:
            with contextlib.suppress(OSError, ValueError):
                click.echo(PREDATES_HINT, err=True)


def load_command(args: list[str]) -> None:
    """Import the module of the command named in `args` (its first word that names one), as the
    entry does while a Ctrl-C still means a quiet exit 130: inside click's `main` a Ctrl-C
    prints a newline first."""
    name = next((arg for arg in args if arg in COMMAND_MODULES), None)
    if name is not None:
        importlib.import_module(COMMAND_MODULES[name])


def _run(epilogue: Epilogue) -> None:
    try:
        result = cli.main(prog_name="overbrainer", standalone_mode=False, obj=epilogue)
    except click.exceptions.NoArgsIsHelpError as error:
        click.echo(error.format_message(), err=True)
        sys.exit(EXIT_USAGE)
    except click.UsageError as error:
        epilogue.hint = False  # the command line was refused: no command ran
        click.echo(redact(f"error: {usage_line(error)}"), err=True)
        sys.exit(EXIT_USAGE)
    except click.ClickException as error:
        click.echo(redact(f"error: {error.format_message()}"), err=True)
        sys.exit(error.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:  # stdout's reader went away (`| head -1`): no traceback
        silence_stdout()
        sys.exit(EXIT_FAILED)
    if isinstance(result, int):
        # Only click's own exit (`--help`) returns a code here: no command ran, so no hint.
        epilogue.hint = False
    sys.exit(result if isinstance(result, int) else EXIT_OK)


def usage_line(error: click.UsageError) -> str:
    """Click's message for a bad argument on one line, pointing at the command's --help."""
    message = " ".join(error.format_message().split()).rstrip(".")
    if error.ctx is None:
        return message
    return f"{message}; see `{error.ctx.command_path} --help`"


def show_bug(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
    """Print an uncaught exception's traceback (a bug) with known secrets masked."""
    text = "".join(traceback.format_exception(kind, error, trace))
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(redact(text))
        sys.stderr.flush()
