"""Stop signals (SIGINT, SIGTERM) as the process's own record: once one came, it exits 130.

A Ctrl-C may land anywhere: in a stage, during its summary, after `trio.run` returned, while
the interpreter finalizes (where Python has put the default action back and the signal would
kill the process, wait status -2). The command line notes every one here and, at its very
end, ignores the signals and exits 130 when one came.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""Ctrl-C, and `kill PID` (a service manager or container stopping the command)."""


class _Noted:
    """Whether a stop signal reached the process (one per process, as the signals are)."""

    came = False


def note_stop() -> None:
    """Record that a stop signal came: the command's exit code will be 130."""
    _Noted.came = True


def stop_came() -> bool:
    """Whether a stop signal came since the process started."""
    return _Noted.came


def noting_handler(signum: int, frame: FrameType | None) -> None:
    """A signal handler that only notes the signal (`note_stop`)."""
    note_stop()


def note_stop_signals() -> None:
    """From now on a stop signal is only noted: nothing is raised, the exit goes on."""
    if threading.current_thread() is threading.main_thread():
        for signum in STOP_SIGNALS:
            signal.signal(signum, noting_handler)


def ignore_stop_signals() -> bool:
    """Ignore stop signals from now to the process's end; whether one came before.

    `signal.signal` first runs the handlers of signals already pending, so one that arrived
    just before is still noted. `SIG_IGN`, not a Python handler: Python resets its own
    handlers to the default action while it finalizes, but leaves an ignored signal ignored.
    """
    if threading.current_thread() is threading.main_thread():
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)
    return stop_came()
