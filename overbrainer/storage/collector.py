"""Pausing Python's cycle collector while a bulk of small, long-lived records is built."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cycle collector for the block, then restore its previous state.

    Parsing builds many small acyclic objects, and the collector's repeated scans of them
    would cost more than the parsing (`bench/gc_switches.py`: a bulk read of 100,000 answers
    1.2× faster). While they live, each scan of them is also one C call that holds the GIL
    for hundreds of milliseconds, in whichever thread set it off: the event loop waits that
    long (`bench/stall.py`). The switch is process-wide; a nested pause leaves it off.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
