"""The global flags (`-C DIR`, `--events FILE`) as the flows' plain `CommandOptions`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from overbrainer.cli.context import JSON_REPORT_KEY, project_dir

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


def _start_report(ctx: click.Context, param: click.Parameter, wanted: bool) -> None:
    if not wanted:
        return
    # Imported on use: `--help` and completion never need it.
    from overbrainer.ui.json_report import JsonReport

    name = ctx.command_path.partition(" ")[2] or ctx.command_path
    ctx.meta[JSON_REPORT_KEY] = JsonReport(name)


def json_option(command: F) -> F:
    """`--json`: one JSON document on stdout when the command ends (docs/json.md)."""
    return click.option(
        "--json",
        "json_output",
        is_flag=True,
        expose_value=False,
        callback=_start_report,
        help="Print one JSON document on stdout when done (nothing else there; progress and "
        "logs stay on stderr); see docs/json.md.",
    )(command)
