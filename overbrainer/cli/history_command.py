"""`overbrainer history [--all] [--json]`: tokens and cost of every stage run (no lock)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from overbrainer.cli.context import json_report, project_dir
from overbrainer.cli.group import cli
from overbrainer.cli.options import json_option
from overbrainer.cli.running import run_flow
from overbrainer.model.errors import OverbrainerError

if TYPE_CHECKING:
    from overbrainer.model.json_values import JsonValue
    from overbrainer.storage import HistoryTotal


@cli.command()
@click.option("--all", "all_entries", is_flag=True, help="One line per stage run, oldest first.")
@json_option
def history(all_entries: bool) -> None:
    """Show the runs, tokens and cost of each stage, and their total, from the project history."""
    # Imported on use: defining the command (for `--help`, completion) needs only click.
    from overbrainer.project.directory import open_project
    from overbrainer.storage import format_history, history_totals, read_history

    report = json_report()

    async def flow() -> None:
        project = open_project(project_dir())
        try:
            records = read_history(project.history)
        except OSError as error:
            raise OverbrainerError(f"cannot read {project.history}: {error.strerror}") from None
        if report is None:
            for line in format_history(records, all_entries):
                click.echo(line)
            return
        per_stage, overall = history_totals(records)
        report.put("stages", {stage.value: _total(total) for stage, total in per_stage.items()})
        report.put("total", _total(overall))
        if all_entries:
            report.put("entries", records)

    run_flow(flow)


def _total(total: HistoryTotal) -> dict[str, JsonValue]:
    """A total of `history --json`; `cost` null when no run's cost is known, `cost_partial`
    true when some are unknown (the text's `+`)."""
    from overbrainer.model.json_values import money

    return {
        "runs": total.runs,
        "done": total.done,
        "failed": total.failed,
        "input_tokens": total.input_tokens,
        "output_tokens": total.output_tokens,
        "cost": money(total.cost.known),
        "cost_partial": total.cost.partial,
    }
