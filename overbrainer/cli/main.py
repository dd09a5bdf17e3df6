"""The `overbrainer` command group; command modules register themselves at the bottom."""

from __future__ import annotations

from pathlib import Path

import click

from overbrainer import __version__
from overbrainer.cli.context import PROJECT_DIR_KEY
from overbrainer.cli.options import EVENTS_FILE_KEY
from overbrainer.logs import init_logging


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


def main() -> None:
    """Entry point of the console script."""
    cli()


# Each command module adds its commands to `cli` when imported (one line per module).
from overbrainer.cli import commands_registry  # noqa: E402, F401
