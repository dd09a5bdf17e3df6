"""`overbrainer history [--all]`: tokens and cost of every stage run (read-only, no lock)."""

from __future__ import annotations

import click

from overbrainer.cli.context import project_dir
from overbrainer.cli.group import cli
from overbrainer.cli.running import run_flow
from overbrainer.model.errors import OverbrainerError


@cli.command()
@click.option("--all", "all_entries", is_flag=True, help="One line per stage run, oldest first.")
def history(all_entries: bool) -> None:
    """Show the runs, tokens and cost of each stage, and their total, from the project history."""
    # Imported on use: defining the command (for `--help`, completion) needs only click.
    from overbrainer.project.directory import open_project
    from overbrainer.storage import format_history, read_history

    async def flow() -> None:
        project = open_project(project_dir())
        try:
            records = read_history(project.history)
        except OSError as error:
            raise OverbrainerError(f"cannot read {project.history}: {error.strerror}") from None
        for line in format_history(records, all_entries):
            click.echo(line)

    run_flow(flow)
