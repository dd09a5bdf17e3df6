"""What the group's global flags leave for the commands (project directory, display)."""

from __future__ import annotations

from pathlib import Path

import click

from overbrainer.ui.display import Display
from overbrainer.ui.front import CliFrontend

PROJECT_DIR_KEY = "overbrainer.project_dir"
DISPLAY_KEY = "overbrainer.display"


def project_dir() -> Path:
    """The `-C/--project-dir` directory of the running command (default: the current one)."""
    path = click.get_current_context().meta.get(PROJECT_DIR_KEY, Path("."))
    assert isinstance(path, Path)
    return path


def cli_frontend() -> CliFrontend:
    """The terminal front end with the display the global flags and stderr chose."""
    display = click.get_current_context().meta.get(DISPLAY_KEY, Display.LINES)
    assert isinstance(display, Display)
    return CliFrontend(display)
