"""`overbrainer push (RUN_ID | --dataset) [--repo NS/NAME] [--public] [--overwrite-card]
[--dry-run]`."""

from __future__ import annotations

import click

from overbrainer.cli.completion import complete_run_ids
from overbrainer.cli.context import cli_frontend
from overbrainer.cli.group import cli
from overbrainer.cli.options import command_options, json_option
from overbrainer.cli.running import run_flow


@cli.command()
@click.argument("run_id", required=False, shell_complete=complete_run_ids)
@click.option(
    "--dataset", is_flag=True, help="Push the project's data/train.jsonl and eval.jsonl instead."
)
@click.option("--repo", metavar="NS/NAME", help="Push to this repo (else [hub] repo, else yours).")
@click.option("--public", is_flag=True, help="Create the repo public (private by default).")
@click.option(
    "--overwrite-card", is_flag=True, help="Replace the repo's README.md even if it is not ours."
)
@click.option("--dry-run", is_flag=True, help="Show what would be sent; write the card locally.")
@json_option
def push(
    run_id: str | None,
    dataset: bool,
    repo: str | None,
    public: bool,
    overwrite_card: bool,
    dry_run: bool,
) -> None:
    """Push a run's model, GGUF files and model card (or the dataset) to the Hugging Face Hub."""
    # Imported on use: defining the command (for `--help`, completion) needs only click.
    from overbrainer.flows.push import push_dataset_flow, push_flow

    if dataset and run_id is not None:
        raise click.UsageError("--dataset pushes the project's dataset: give it without RUN_ID")
    if not dataset and run_id is None:
        raise click.UsageError("missing RUN_ID (or --dataset to push the project's dataset)")
    options = command_options()
    if run_id is None:
        run_flow(
            lambda: push_dataset_flow(
                options,
                cli_frontend(),
                repo=repo,
                public=public,
                overwrite_card=overwrite_card,
                dry_run=dry_run,
            )
        )
        return
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
