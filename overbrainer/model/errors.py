"""Errors that reach the user as one line, each with its exit code."""

from __future__ import annotations

from overbrainer.model.redact import redact

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class OverbrainerError(Exception):
    """A failure the user is told about as `error: <message>`; never holds secrets."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str) -> None:
        # Provider text (an echoed header, a URL) can quote a key: mask what is known.
        message = redact(message)
        super().__init__(message)
        self.message = message


class UsageError(OverbrainerError):
    """Bad input: a flag, an argument, a file the user named."""

    exit_code = EXIT_USAGE


class WorkFailed(OverbrainerError):
    """The work ran but did not succeed (items failed, a job failed)."""

    exit_code = EXIT_FAILED
