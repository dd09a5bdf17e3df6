"""`overbrainer import questions FILE [--topic NAME]`: bring your own questions."""

from __future__ import annotations

from pathlib import Path

import click

from overbrainer.cli.completion import complete_topics
from overbrainer.cli.context import cli_frontend
from overbrainer.cli.group import cli
from overbrainer.cli.options import command_options, json_option
from overbrainer.cli.running import run_flow


@cli.group(name="import")
def import_group() -> None:
    """Add data of your own to the project."""


@import_group.command()
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--topic",
    metavar="NAME",
    default=None,
    shell_complete=complete_topics,
    help="Put every question in this topic (default: the file's `topic` column).",
)
@json_option
def questions(file: Path, topic: str | None) -> None:
    """Add the questions of a JSONL or CSV file to data/questions.jsonl, skipping duplicates."""
    # Imported on use: defining the command (for `--help`, completion) needs only click.
    from overbrainer.flows.import_questions import import_questions_flow

    options = command_options()
    run_flow(lambda: import_questions_flow(options, cli_frontend(), file, topic))
