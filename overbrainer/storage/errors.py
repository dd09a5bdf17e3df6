"""The errors of project files: one for a file that cannot be used, one for a bad record, and
the one way a full disk (or quota) becomes an `error:` line naming the file."""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator
from pathlib import Path

from overbrainer.model.errors import EXIT_USAGE, OverbrainerError

NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})
"""The errors of a full disk and of a full quota: the user's to fix, never a bug."""


class DataError(OverbrainerError):
    """A data file cannot be read or written, or holds an invalid record."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, cause: str | None = None) -> None:
        super().__init__(message if not cause else f"{message}: {cause}")
        self.cause = cause


class InvalidRecord(DataError):
    """A project file holds a line or document that is not a valid record: bad input, found
    before anything is written (a stage then records no history line)."""


class DiskFull(DataError, OSError):
    """No space (ENOSPC) or quota (EDQUOT) left to write a project file: exit 2, the file named.

    An OSError too, so that code which handles a failed write (a cleanup, a fallback, its own
    message) still sees it as one; what nothing handles reaches the user as one line.
    """

    def __init__(self, path: Path, error: OSError, action: str = "access") -> None:
        strerror = error.strerror or errno.errorcode.get(error.errno or 0, "no space")
        DataError.__init__(self, f"cannot {action} {path}", strerror)
        self.errno = error.errno
        self.strerror = strerror
        self.filename = str(path)

    def __str__(self) -> str:
        return self.message


def is_full(error: BaseException) -> bool:
    """Whether `error` says the disk or the quota is full."""
    return isinstance(error, OSError) and error.errno in NO_SPACE


@contextlib.contextmanager
def space_for(path: Path, action: str = "access") -> Iterator[None]:
    """Inside, a full disk or quota becomes `DiskFull` naming `path` («cannot access PATH: No
    space left on device»); other errors pass as they are."""
    try:
        yield
    except DiskFull:
        raise
    except OSError as error:
        if error.errno in NO_SPACE:
            raise DiskFull(path, error, action) from None
        raise
