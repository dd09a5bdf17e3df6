"""`overbrainer tui`: the whole loop in one terminal screen."""

from __future__ import annotations

import sys

from overbrainer.cli.group import cli
from overbrainer.cli.options import command_options
from overbrainer.cli.running import run_flow
from overbrainer.ui.tui.main import tui_flow


@cli.command()
def tui() -> None:
    """Watch and steer the pipeline, training and logs in one terminal screen."""
    options = command_options()
    run_flow(lambda: tui_flow(options, sys.stdout, sys.stdin))
