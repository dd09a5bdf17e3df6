"""Keys typed while the TUI starts: kept for the screen instead of lost.

urwid puts the terminal in cbreak mode with TCSAFLUSH, which throws away whatever was typed
before the screen came up. Setting cbreak ourselves first, without a flush, makes those keys
readable; they are read just before urwid starts and handed to the screen once it is up.
"""

from __future__ import annotations

import contextlib
import os
import select
import termios
from collections.abc import Iterator

from urwid.display import escape

TAKE_AT_MOST = 65_536
"""Bytes of typed-ahead input kept (more is a paste, not keys)."""


class TypeAhead:
    """The input typed so far on a terminal in cbreak mode."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    def take(self) -> list[str]:
        """The keys typed so far (urwid's names), read without waiting."""
        if self.fd is None:
            return []
        data = b""
        with contextlib.suppress(OSError):
            while len(data) < TAKE_AT_MOST and select.select([self.fd], [], [], 0)[0]:
                chunk = os.read(self.fd, 4096)
                if not chunk:
                    break
                data += chunk
        return keys_of(data)


def keys_of(data: bytes) -> list[str]:
    """The keys `data` holds, as urwid names them (`q`, `tab`, `page up`…)."""
    codes = list(data)
    keys: list[str] = []
    while codes:
        found, rest = escape.process_keyqueue(codes, more_available=False)
        keys.extend(key for key in found if isinstance(key, str))
        codes = rest if len(rest) < len(codes) else codes[1:]
    return keys


@contextlib.contextmanager
def keep_typeahead(fd: int) -> Iterator[TypeAhead]:
    """Cbreak mode at once (nothing typed is flushed); the terminal's settings back at the end."""
    try:
        old = termios.tcgetattr(fd)
    except termios.error:
        yield TypeAhead(None)
        return
    mode = termios.tcgetattr(fd)
    mode[3] &= ~(termios.ECHO | termios.ICANON)  # lflag
    mode[6][termios.VMIN] = 1
    mode[6][termios.VTIME] = 0
    termios.tcsetattr(fd, termios.TCSANOW, mode)
    try:
        yield TypeAhead(fd)
    finally:
        with contextlib.suppress(termios.error):
            termios.tcsetattr(fd, termios.TCSADRAIN, old)
