"""The global flags (`-C DIR`, `--events FILE`) as the flows' plain `CommandOptions`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from overbrainer.cli.context import project_dir

if TYPE_CHECKING:
    from overbrainer.flows.setup import CommandOptions

EVENTS_FILE_KEY = "overbrainer.events_file"


def events_file() -> Path | None:
    """The `--events FILE` of the running command, if given."""
    path = click.get_current_context().meta.get(EVENTS_FILE_KEY)
    assert path is None or isinstance(path, Path)
    return path


def command_options() -> CommandOptions:
    """The running command's global flags, handed to its flow."""
    # Imported here: the flows' setup brings the config layer and Trio, which the group's
    # `--version`, `--help` and completion never need.
    from overbrainer.flows.setup import CommandOptions

    return CommandOptions(project_dir(), events_file())


F = TypeVar("F", bound=Callable[..., None])


def max_cost_option(command: F) -> F:
    """`--max-cost USD`: the spend cap of the command's paid requests."""
    return click.option(
        "--max-cost",
        type=click.FloatRange(min=0.0),
        default=None,
        metavar="USD",
        help="Spend at most USD in this command: a request starts only if its worst-case "
        "cost fits under it (default: [pipeline] max_cost_usd).",
    )(command)
