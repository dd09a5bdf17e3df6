"""The `overbrainer` command group; command modules register themselves at the bottom."""

from __future__ import annotations

import click

from overbrainer import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="overbrainer")
def cli() -> None:
    """Distil a large parent LLM into a small child model."""


def main() -> None:
    """Entry point of the console script."""
    cli()


# Each command module adds its commands to `cli` when imported (one line per module).
from overbrainer.cli import commands_registry  # noqa: E402, F401
