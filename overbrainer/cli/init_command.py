"""`overbrainer init [DIR]`: write a new project."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from overbrainer.cli.context import project_dir
from overbrainer.cli.group import cli
from overbrainer.model.errors import OverbrainerError

log = logging.getLogger(__name__)


@cli.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--demo",
    is_flag=True,
    help="A small project on the embedded stand-in provider: runs offline, no key needed.",
)
def init(directory: Path | None, demo: bool) -> None:
    """Write a new project in DIR (default: the -C directory)."""
    # Imported on use: defining the command (for `--help`, completion) needs only click.
    from overbrainer.project.init import init_project

    root = directory if directory is not None else project_dir()
    try:
        written = init_project(root, demo=demo)
    except OverbrainerError as error:
        click.echo(f"error: {error.message}", err=True)
        raise SystemExit(error.exit_code) from None
    for path in written:
        log.info("created %s", path)
    where = "" if directory is None else f"cd {root} && "
    if demo:
        click.echo(f"next: make the demo dataset with `{where}overbrainer run --no-train`")
        return
    click.echo(
        "next: copy .env.example to .env and put the provider's key in it, "
        f"then `{where}overbrainer config check` and `overbrainer run`"
    )
