"""Memory work that would hold the GIL: pausing the cycle collector, freeing big lists."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")

FREE_SLICE = 1000
"""Items `free_gradually` frees per call: well under a millisecond of deallocation."""

YOUNG_THRESHOLD = 10_000
"""Allocations between two young collections (Python's default is 700): see
`fewer_young_collections`."""


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


def fewer_young_collections() -> None:
    """Let `YOUNG_THRESHOLD` objects be allocated between two young collections (was 700).

    Imports build tens of thousands of objects that all live, and a stage keeps the objects
    of every request in flight (64 or more) alive across many collections: each young one
    scanned and promoted them again, and each tenth a middle one rescanned them. For `answers`
    of 2,000 questions that was about 240 young, 20 middle and 1-2 full collections, 100 to
    200 ms of CPU, against about 15 collections and 30 ms now (`bench/README.md`, the answers
    hot path). What holds no cycle is still freed at once; the young generation holds at most
    10,000 more objects (peak RSS unchanged), and one scan of it is a few milliseconds.
    """
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)


def free_gradually(items: list[T]) -> None:
    """Empty `items` a slice at a time; in a worker thread, for a list of many records.

    Freeing a list frees its items in one C call that holds the GIL throughout: for 100,000
    records, tens of milliseconds in which the event loop cannot run even though the work is
    in another thread. Between slices the thread lets the loop take the GIL.
    """
    while items:
        del items[-FREE_SLICE:]
