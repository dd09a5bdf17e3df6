"""`overbrainer migrate [--dry-run]`: upgrade a project to the format of overbrainer 0.4.0."""

from __future__ import annotations

import click

from overbrainer.cli.context import project_dir
from overbrainer.cli.group import cli
from overbrainer.cli.running import run_flow


@cli.command()
@click.option("--dry-run", is_flag=True, help="Print what would change and change nothing.")
def migrate(dry_run: bool) -> None:
    """Upgrade a project without .overbrainer/version (older than format 1) to format 1."""
    # Imported on use: defining the command (for `--help`, completion) needs only click.
    from overbrainer.project.directory import open_project, project_lock
    from overbrainer.project.migrate import NOTHING, change_lines, plan_migration

    async def flow() -> None:
        project = open_project(project_dir())
        # Even a dry run takes the lock: a plan read while another command writes is stale.
        with project_lock(project):
            plan = plan_migration(project)
            for note in plan.notes:
                click.echo(note)
            if not plan.changes and not plan.notes:
                click.echo(NOTHING)
            for change in plan.changes:
                if not dry_run:
                    change.apply(project)
                for line in change_lines(change, dry_run):
                    click.echo(line)

    run_flow(flow)
