"""The `overbrainer` click group and its global flags; command modules add their commands."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import attrs
import click

from overbrainer import __version__
from overbrainer.cli.context import DISPLAY_KEY, PROJECT_DIR_KEY
from overbrainer.cli.global_options import GLOBAL_OPTIONS_EPILOG, GlobalOptionsGroup
from overbrainer.cli.options import EVENTS_FILE_KEY
from overbrainer.cli.update_check import PendingCheck, start_check, wanted
from overbrainer.project.directory import predates_versions
from overbrainer.ui.display import choose_display
from overbrainer.ui.logs import init_logging

NO_HINT_COMMANDS = frozenset({"init", "migrate"})
"""Commands that do not end with the «run overbrainer migrate» hint on an older project."""


@attrs.define
class Epilogue:
    """What `main` prints on stderr once the command is over, whatever its outcome."""

    hint: bool = False
    update: PendingCheck | None = None


@click.group(
    cls=GlobalOptionsGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=GLOBAL_OPTIONS_EPILOG,
)
@click.version_option(__version__, prog_name="overbrainer")
@click.option(
    "-C",
    "--project-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Where to look for the project: this directory, else the nearest parent holding "
    "overbrainer.toml (as `git -C`).",
)
@click.option(
    "--events",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write every progress event to FILE, one JSON line each, flushed as it happens.",
)
@click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="Show only warnings, errors and the summary lines: no progress lines, no bar.",
)
@click.pass_context
def cli(ctx: click.Context, project_dir: Path, events: Path | None, quiet: bool) -> None:
    """Distil a large parent LLM into a small child model."""
    init_logging(quiet=quiet)
    ctx.meta[DISPLAY_KEY] = choose_display(quiet, sys.stderr, os.environ)
    ctx.meta[PROJECT_DIR_KEY] = project_dir
    ctx.meta[EVENTS_FILE_KEY] = events
    if isinstance(ctx.obj, Epilogue) and ctx.invoked_subcommand not in NO_HINT_COMMANDS:
        ctx.obj.hint = predates_versions(project_dir)
    if isinstance(ctx.obj, Epilogue) and wanted(
        os.environ, ctx.invoked_subcommand, sys.stderr.isatty()
    ):
        ctx.obj.update = start_check(os.environ)
