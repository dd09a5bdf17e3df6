"""`overbrainer push RUN_ID [--repo NS/NAME] [--public] [--overwrite-card] [--dry-run]`."""

from __future__ import annotations

import click

from overbrainer.cli.completion import complete_run_ids
from overbrainer.cli.context import cli_frontend
from overbrainer.cli.group import cli
from overbrainer.cli.options import command_options
from overbrainer.cli.running import run_flow


@cli.command()
@click.argument("run_id", shell_complete=complete_run_ids)
@click.option("--repo", metavar="NS/NAME", help="Push to this repo (else [hub] repo, else yours).")
@click.option("--public", is_flag=True, help="Create the repo public (private by default).")
@click.option(
    "--overwrite-card", is_flag=True, help="Replace the repo's README.md even if it is not ours."
)
@click.option("--dry-run", is_flag=True, help="Show what would be sent; write the card locally.")
def push(run_id: str, repo: str | None, public: bool, overwrite_card: bool, dry_run: bool) -> None:
    """Push a run's model, GGUF files and model card to the Hugging Face Hub."""
    # Imported on use: defining the command (for `--help`, completion) needs only click.
    from overbrainer.flows.push import push_flow

    options = command_options()
    run_flow(
        lambda: push_flow(
            options,
            cli_frontend(),
            run_id,
            repo=repo,
            public=public,
            overwrite_card=overwrite_card,
            dry_run=dry_run,
        )
    )
