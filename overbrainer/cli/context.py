"""What the group's global flags leave for the commands (the project directory)."""

from __future__ import annotations

from pathlib import Path

import click

PROJECT_DIR_KEY = "overbrainer.project_dir"


def project_dir() -> Path:
    """The `-C/--project-dir` directory of the running command (default: the current one)."""
    path = click.get_current_context().meta.get(PROJECT_DIR_KEY, Path("."))
    assert isinstance(path, Path)
    return path
