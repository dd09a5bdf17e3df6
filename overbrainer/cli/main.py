"""The `overbrainer` command group; command modules register themselves at the bottom."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import attrs
import click

from overbrainer import __version__
from overbrainer.cli.context import PROJECT_DIR_KEY
from overbrainer.cli.options import EVENTS_FILE_KEY
from overbrainer.model.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from overbrainer.project.directory import PREDATES_HINT, predates_versions
from overbrainer.ui.front import silence_stdout
from overbrainer.ui.logs import init_logging

NO_HINT_COMMANDS = frozenset({"init", "migrate"})
"""Commands that do not end with the «run overbrainer migrate» hint on an older project."""


@attrs.define
class Epilogue:
    """What `main` prints on stderr once the command is over, whatever its outcome."""

    hint: bool = False


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="overbrainer")
@click.option(
    "-C",
    "--project-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The project directory.",
)
@click.option(
    "--events",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write every progress event to FILE, one JSON line each, flushed as it happens.",
)
@click.pass_context
def cli(ctx: click.Context, project_dir: Path, events: Path | None) -> None:
    """Distil a large parent LLM into a small child model."""
    init_logging()
    ctx.meta[PROJECT_DIR_KEY] = project_dir
    ctx.meta[EVENTS_FILE_KEY] = events
    if isinstance(ctx.obj, Epilogue) and ctx.invoked_subcommand not in NO_HINT_COMMANDS:
        ctx.obj.hint = predates_versions(project_dir)


def main() -> None:
    """Entry point of the console script: bad arguments give one `error:` line and exit 2."""
    epilogue = Epilogue()
    try:
        _run(epilogue)
    finally:
        # Last on stderr, after the command's own output and error line; the exit code stays.
        if epilogue.hint:
            with contextlib.suppress(OSError, ValueError):
                click.echo(PREDATES_HINT, err=True)


def _run(epilogue: Epilogue) -> None:
    try:
        result = cli.main(prog_name="overbrainer", standalone_mode=False, obj=epilogue)
    except click.exceptions.NoArgsIsHelpError as error:
        click.echo(error.format_message(), err=True)
        sys.exit(EXIT_USAGE)
    except click.UsageError as error:
        epilogue.hint = False  # the command line was refused: no command ran
        click.echo(f"error: {usage_line(error)}", err=True)
        sys.exit(EXIT_USAGE)
    except click.ClickException as error:
        click.echo(f"error: {error.format_message()}", err=True)
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


# Each command module adds its commands to `cli` when imported (one line per module).
from overbrainer.cli import commands_registry  # noqa: E402, F401
