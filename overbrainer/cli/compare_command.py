"""`overbrainer compare [--run RUN_ID] [--limit N] [--questions FILE] [--base] [--keep-pod]
[--rejudge COMPARE_ID]`."""

from __future__ import annotations

from pathlib import Path

import click

from overbrainer.cli.completion import complete_run_ids
from overbrainer.cli.context import cli_frontend
from overbrainer.cli.group import cli
from overbrainer.cli.options import command_options, json_option, max_cost_option
from overbrainer.cli.running import run_flow


@cli.command()
@click.option(
    "--run",
    "run_id",
    metavar="RUN_ID",
    shell_complete=complete_run_ids,
    help="Compare this run (default: the newest run with a GGUF).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1, max=2**32 - 1),
    metavar="N",
    help="Ask only the first N questions of data/eval.jsonl.",
)
@click.option("--keep-pod", is_flag=True, help="Runpod targets only: keep the pod after the job.")
@click.option(
    "--rejudge",
    metavar="COMPARE_ID",
    help="Judge an earlier compare again (resume, or another judge or prompt).",
)
@click.option(
    "--questions",
    "questions_file",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="Ask these questions (JSONL or CSV, each with the parent's `answer`) instead of "
    "data/eval.jsonl.",
)
@click.option(
    "--base/--no-base",
    default=None,
    help="Also ask the run's base model (its GGUF, `overbrainer export RUN --base`) and judge "
    "the child against it (default: [compare] include_base).",
)
@max_cost_option
@json_option
def compare(
    run_id: str | None,
    limit: int | None,
    keep_pod: bool,
    rejudge: str | None,
    max_cost: float | None,
    questions_file: Path | None,
    base: bool | None,
) -> None:
    """Measure the exported child against the parent on the held-out questions."""
    if rejudge is not None and (limit is not None or keep_pod or questions_file is not None):
        raise click.UsageError("--limit, --keep-pod and --questions go without --rejudge")
    if rejudge is not None and base is not None:
        raise click.UsageError(
            "--base goes without --rejudge: a rejudge judges what its compare asked"
        )
    # Imported on use: defining the command (for `--help`, completion) needs only click.
    from overbrainer.flows.compare import compare_flow

    options = command_options()
    run_flow(
        lambda: compare_flow(
            options,
            cli_frontend(),
            run_id=run_id,
            limit=limit,
            keep_pod=keep_pod,
            rejudge=rejudge,
            max_cost=max_cost,
            questions_file=questions_file,
            base=base,
        )
    )
