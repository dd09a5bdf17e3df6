"""Text files a user edits, decoded as UTF-8 with an error that says where it is not."""

from __future__ import annotations

from overbrainer.model.errors import UsageError


class NotUtf8(UsageError):
    """A file the user wrote is not UTF-8 text (exit code 2)."""


def decode_utf8(raw: bytes, name: str) -> str:
    """`raw` as text; `NotUtf8` naming `name` and the first bad byte's offset otherwise."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NotUtf8(f"{name}: not valid UTF-8 at byte {error.start}") from None
