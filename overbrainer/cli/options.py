"""The global flags (`-C DIR`, `--events FILE`) as the flows' plain `CommandOptions`."""

from __future__ import annotations

from pathlib import Path

import click

from overbrainer.cli.context import project_dir
from overbrainer.flows.setup import CommandOptions

EVENTS_FILE_KEY = "overbrainer.events_file"


def events_file() -> Path | None:
    """The `--events FILE` of the running command, if given."""
    path = click.get_current_context().meta.get(EVENTS_FILE_KEY)
    assert path is None or isinstance(path, Path)
    return path


def command_options() -> CommandOptions:
    """The running command's global flags, handed to its flow."""
    return CommandOptions(project_dir(), events_file())
