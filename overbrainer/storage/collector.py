"""Memory work that would hold the GIL: pausing the cycle collector, freeing big lists."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")

FREE_SLICE = 1000
"""Items `free_gradually` frees per call: well under a millisecond of deallocation."""


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


def free_gradually(items: list[T]) -> None:
    """Empty `items` a slice at a time; in a worker thread, for a list of many records.

    Freeing a list frees its items in one C call that holds the GIL throughout: for 100,000
    records, tens of milliseconds in which the event loop cannot run even though the work is
    in another thread. Between slices the thread lets the loop take the GIL.
    """
    while items:
        del items[-FREE_SLICE:]
