"""What the group's global flags leave for the commands (project directory, display)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from overbrainer.ui.display import Display

if TYPE_CHECKING:
    from overbrainer.ui.front import CliFrontend
    from overbrainer.ui.json_report import JsonReport

PROJECT_DIR_KEY = "overbrainer.project_dir"
DISPLAY_KEY = "overbrainer.display"
JSON_REPORT_KEY = "overbrainer.json_report"
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


def cli_frontend() -> CliFrontend:
    """The terminal front end with the display the global flags and stderr chose."""
    # Imported here, not at the top: it brings Trio, which `--version` and `--help` never need.
    from overbrainer.ui.front import CliFrontend

    display = click.get_current_context().meta.get(DISPLAY_KEY, Display.LINES)
    assert isinstance(display, Display)
    return CliFrontend(display, report=json_report())


def json_report() -> JsonReport | None:
    """The `--json` document of the running command; None without `--json` (or no command)."""
    from overbrainer.ui.json_report import JsonReport

    ctx = click.get_current_context(silent=True)
    report = None if ctx is None else ctx.meta.get(JSON_REPORT_KEY)
    assert report is None or isinstance(report, JsonReport)
    return report
