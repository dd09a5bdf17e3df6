"""The state of a detached job on its target."""

from __future__ import annotations

import attrs


@attrs.frozen
class Running:
    """The job is still running."""


@attrs.frozen
class Exited:
    """The job ended with this exit code."""

    code: int


@attrs.frozen
class Cancelled:
    """The job was stopped by a cancel."""


@attrs.frozen
class Lost:
    """The job is gone without an exit code (killed, or its directory vanished)."""


JobStatus = Running | Exited | Cancelled | Lost


def is_finished(status: JobStatus) -> bool:
    """Every status but `Running` is final."""
    return not isinstance(status, Running)


def status_name(status: JobStatus) -> str:
    """The words the progress lines use for a status."""
    match status:
        case Running():
            return "running"
        case Exited(code):
            return f"exited with code {code}"
        case Cancelled():
            return "cancelled"
        case Lost():
            return "lost (stopped without an exit code)"
