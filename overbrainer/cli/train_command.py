"""`overbrainer train [--target NAME] [--resume-from RUN_ID]` and `train attach|stop|cancel`."""

from __future__ import annotations

import click

from overbrainer.cli.completion import complete_run_ids, complete_targets
from overbrainer.cli.context import cli_frontend
from overbrainer.cli.group import cli
from overbrainer.cli.options import command_options, json_option
from overbrainer.cli.running import run_flow


@cli.group(invoke_without_command=True)
@click.option(
    "--target",
    "target_name",
    metavar="NAME",
    shell_complete=complete_targets,
    help="Train on this [targets] entry.",
)
@click.option(
    "--resume-from",
    metavar="RUN_ID",
    shell_complete=complete_run_ids,
    help="Resume from the snapshot of a stopped run.",
)
@click.option("--keep-pod", is_flag=True, help="Runpod targets only: keep the pod after the run.")
@click.option(
    "--force", is_flag=True, help="Start even while another run still trains on the target."
)
@json_option
@click.pass_context
def train(
    ctx: click.Context,
    target_name: str | None,
    resume_from: str | None,
    keep_pod: bool,
    force: bool,
) -> None:
    """Fine-tune the child on data/train.jsonl with Axolotl and follow the run to its end."""
    if ctx.invoked_subcommand is not None:
        if target_name is not None or resume_from is not None or keep_pod or force:
            raise click.UsageError(
                "--target, --resume-from, --keep-pod and --force go without a subcommand"
            )
        return
    # Imported on use: defining the command (for `--help`, completion) needs only click.
    from overbrainer.flows.train import train_flow

    options = command_options()
    run_flow(
        lambda: train_flow(
            options,
            cli_frontend(),
            target_name=target_name,
            resume_from=resume_from,
            keep_pod=keep_pod,
            force=force,
        )
    )


@train.command()
@click.argument("run_id", shell_complete=complete_run_ids)
@json_option
def attach(run_id: str) -> None:
    """Follow a run again until its job ends, then record and report how it ended."""
    from overbrainer.flows.train import attach_flow

    options = command_options()
    run_flow(lambda: attach_flow(options, cli_frontend(), run_id))


@train.command()
@click.argument("run_id", shell_complete=complete_run_ids)
@json_option
def stop(run_id: str) -> None:
    """Ask a run's job to save a snapshot and stop, then follow it to its end."""
    from overbrainer.flows.train import stop_flow

    options = command_options()
    run_flow(lambda: stop_flow(options, cli_frontend(), run_id))


@train.command()
@click.argument("run_id", shell_complete=complete_run_ids)
@json_option
def cancel(run_id: str) -> None:
    """Stop a run's job (TERM, then KILL after 10 s) and record it cancelled."""
    from overbrainer.flows.train import cancel_flow

    options = command_options()
    run_flow(lambda: cancel_flow(options, cli_frontend(), run_id))
