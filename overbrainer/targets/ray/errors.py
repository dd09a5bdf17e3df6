"""Errors of a Ray cluster's Jobs API, each carrying the one line the user is told."""

from __future__ import annotations

from overbrainer.model.errors import EXIT_USAGE, OverbrainerError


class RayError(OverbrainerError):
    """A Jobs API call failed; `status` is the HTTP status when an answer came."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RayRefused(RayError):
    """The cluster (or the proxy before it) refused our credentials: a configuration problem."""

    exit_code = EXIT_USAGE


class RayUnanswered(RayError):
    """No answer came in time (a frozen or unreachable head): the job's state is unknown, not
    failed."""


class RayJobMissing(RayError):
    """The cluster has no job with this submission ID (never submitted, or deleted)."""
