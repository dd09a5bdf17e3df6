"""`overbrainer estimate [STAGE...]`: the remaining work of the paid stages and its cost."""

from __future__ import annotations

import click

from overbrainer.cli.context import cli_frontend
from overbrainer.cli.group import cli
from overbrainer.cli.options import command_options
from overbrainer.cli.running import run_flow
from overbrainer.events.types import Stage
from overbrainer.flows.estimate import estimate_flow
from overbrainer.pipeline.estimate import PAID_STAGES


@cli.command()
@click.argument(
    "stages",
    nargs=-1,
    type=click.Choice([stage.value for stage in PAID_STAGES]),
)
def estimate(stages: tuple[str, ...]) -> None:
    """Estimate what the paid stages (default: all three) still have to do and may cost."""
    options = command_options()
    chosen = [Stage(name) for name in stages]
    run_flow(lambda: estimate_flow(options, cli_frontend(), chosen))
