"""What the group's global flags leave for the commands (the project directory)."""

from __future__ import annotations

from pathlib import Path

import click

PROJECT_DIR_KEY = "overbrainer.project_dir"
PROJECT_DIR_PARAM = "project_dir"
"""The name of the group's `-C/--project-dir` parameter."""


def project_dir() -> Path:
    """Where the running command looks for its project: `-C DIR`, else the current directory.

    As with `git -C`, the search starts there and walks up to the nearest `overbrainer.toml`
    (see `project.directory.find_root`); `init` writes in this directory itself.
    """
    path = click.get_current_context().meta.get(PROJECT_DIR_KEY, Path("."))
    assert isinstance(path, Path)
    return path
