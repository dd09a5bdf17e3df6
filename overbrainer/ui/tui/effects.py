"""The effects the app asks of its loop: start or stop a task, open the editor, export, exit."""

from __future__ import annotations

import attrs

from overbrainer.ui.tui.task_spec import TaskSpec


@attrs.frozen
class Spawn:
    """Start `spec` as task `task` in the app's nursery."""

    task: int
    spec: TaskSpec


@attrs.frozen
class Cancel:
    """Set task `task`'s detach event: a stage stops, a followed run is detached."""

    task: int


@attrs.frozen
class Abandon:
    """Set task `task`'s detach event, giving it up (Runpod provisioning is cancelled too)."""

    task: int


@attrs.frozen
class OpenEditor:
    """Run `$VISUAL`/`$EDITOR` on `path`, lending it the terminal."""

    path: str


@attrs.frozen
class ExportLogs:
    """Write the kept log lines at or above `level` to `.overbrainer/logs-<ts>.log`."""

    level: int


@attrs.frozen
class Exit:
    """Leave the app (every task has ended)."""


Effect = Spawn | Cancel | Abandon | OpenEditor | ExportLogs | Exit
