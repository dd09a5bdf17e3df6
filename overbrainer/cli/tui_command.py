"""`overbrainer tui`: the whole loop in one terminal screen."""

from __future__ import annotations

import sys

from overbrainer.cli.group import cli
from overbrainer.cli.options import command_options
from overbrainer.cli.running import run_flow


@cli.command()
def tui() -> None:
    """Watch and steer the pipeline, training and logs in one terminal screen."""
    # Imported on use: defining the command (for `--help`, completion) needs only click.
    from overbrainer.ui.tui.main import tui_flow

    options = command_options()
    run_flow(lambda: tui_flow(options, sys.stdout, sys.stdin))
