"""What is left to do with stdout once its reader has gone (`overbrainer … | head -1`)."""

from __future__ import annotations

import os
import sys


def silence_stdout() -> None:
    """Point stdout at /dev/null once its reader has gone, so later writes and flushes pass."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
