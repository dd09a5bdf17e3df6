"""The console script's entry: a Ctrl-C while the program is still loading exits 130 quietly,
and one at any time makes the exit code 130, never a death by the signal."""

from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import NoReturn

from overbrainer.events.stop_signals import ignore_stop_signals, note_stop
from overbrainer.model.errors import EXIT_INTERRUPTED
from overbrainer.storage import fewer_young_collections


def _exit_interrupted(signum: int, frame: FrameType | None) -> None:
    note_stop()
    raise SystemExit(EXIT_INTERRUPTED)


def main() -> None:
    """Import the command line with Ctrl-C meaning «exit 130», then run it."""
    # Importing click, trio, httpx2 and the command takes a few hundred milliseconds; a
    # KeyboardInterrupt there would print a traceback from deep inside some import.
    signal.signal(signal.SIGINT, _exit_interrupted)
    fewer_young_collections()  # before the imports, which build most of a command's objects
    from overbrainer.cli.main import load_command
    from overbrainer.cli.main import main as run_command_line

    load_command(sys.argv[1:])  # the command's own module, still under the quiet handler
    # The quiet handler stays until the command's Trio run starts (`run_flow` installs the
    # default one there): inside click's `main` a KeyboardInterrupt prints a newline first.
    try:
        run_command_line()
    except KeyboardInterrupt:
        _leave(EXIT_INTERRUPTED)
    except SystemExit as done:
        _leave(done.code)


def _leave(code: str | int | None) -> NoReturn:
    """Exit with `code`, or 130 when a Ctrl-C or SIGTERM came at any time; none can kill it now.

    Python gives its own signal handlers back to the default action while it finalizes: a
    Ctrl-C pressed then would end the process by SIGINT (wait status -2) instead of 130.
    """
    if ignore_stop_signals():
        code = EXIT_INTERRUPTED
    sys.exit(code)
