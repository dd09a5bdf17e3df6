"""`overbrainer bench [--run RUN_ID] [--tasks a,b] [--limit N] [--resume BENCH_ID]`."""

from __future__ import annotations

import click

from overbrainer.cli.completion import complete_run_ids
from overbrainer.cli.context import cli_frontend
from overbrainer.cli.group import cli
from overbrainer.cli.options import command_options, json_option
from overbrainer.cli.running import run_flow


def _task_list(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> tuple[str, ...] | None:
    if value is None:
        return None
    tasks = tuple(task.strip() for task in value.split(","))
    if not all(tasks):
        raise click.BadParameter("names an empty task (a,b: lm-eval task names)")
    return tasks


@cli.command()
@click.option(
    "--run",
    "run_id",
    metavar="RUN_ID",
    shell_complete=complete_run_ids,
    help="Bench this run (default: the newest run with a GGUF).",
)
@click.option(
    "--tasks",
    metavar="A,B",
    callback=_task_list,
    help="These lm-eval tasks instead of `[bench] tasks`.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1, max=2**32 - 1),
    metavar="N",
    help="At most N samples per task (instead of `[bench] limit`).",
)
@click.option(
    "--resume",
    metavar="BENCH_ID",
    help="Run an interrupted or failed bench again where it stopped.",
)
@json_option
def bench(
    run_id: str | None, tasks: tuple[str, ...] | None, limit: int | None, resume: str | None
) -> None:
    """Run lm-evaluation-harness tasks against the served child and its base model."""
    if resume is not None and (run_id is not None or tasks is not None or limit is not None):
        raise click.UsageError("--run, --tasks and --limit go without --resume")
    # Imported on use: defining the command (for `--help`, completion) needs only click.
    from overbrainer.flows.bench import bench_flow

    options = command_options()
    run_flow(
        lambda: bench_flow(
            options, cli_frontend(), run_id=run_id, tasks=tasks, limit=limit, resume=resume
        )
    )
