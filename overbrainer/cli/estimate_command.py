"""`overbrainer estimate [STAGE...]`: the remaining work of the paid stages and its cost."""

from __future__ import annotations

import click

from overbrainer.cli.context import cli_frontend
from overbrainer.cli.group import cli
from overbrainer.cli.options import command_options, json_option
from overbrainer.cli.running import run_flow

PAID_STAGE_NAMES = ("subtopics", "questions", "answers", "quality")
"""`pipeline.estimate.PAID_STAGES` by name, written out so that defining the command imports
no pipeline (`tests/test_lazy_commands.py` keeps the two equal)."""


@cli.command()
@click.argument(
    "stages",
    nargs=-1,
    type=click.Choice(PAID_STAGE_NAMES),
)
@json_option
def estimate(stages: tuple[str, ...]) -> None:
    """Estimate what the paid stages (default: all) still have to do and may cost.

    quality is estimated only when overbrainer.toml has a [quality] judge.
    """
    # Imported on use: defining the command (for `--help`, completion) needs only click.
    from overbrainer.events.types import Stage
    from overbrainer.flows.estimate import estimate_flow

    options = command_options()
    chosen = [Stage(name) for name in stages]
    run_flow(lambda: estimate_flow(options, cli_frontend(), chosen))
