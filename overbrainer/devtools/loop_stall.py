"""How long the event loop goes without looking for I/O: the stall that Ctrl-C, a metrics
scrape or a progress refresh waits through (measured by tests and `bench/stall.py`)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import trio


class LoopStalls(trio.abc.Instrument):
    """A Trio instrument keeping the longest span between two of the scheduler's I/O checks.

    Each pass of Trio's scheduler waits for I/O (with no wait when tasks are ready), then
    runs the ready tasks; while they run, nothing new from outside is noticed. The span from
    one I/O check to the next is therefore the loop's stall: one blocking call on the loop
    shows up whole, however many tasks ran around it.

    `longest` is wall-clock time, which also counts the time the system ran other programs
    instead of this one; `longest_busy` is the most CPU time this process (every thread: a
    worker holding the GIL stalls the loop too) spent within one pass, which only our own work
    makes long, however busy the machine.
    """

    def __init__(self, *, running: bool = False) -> None:
        self.longest = 0.0
        self.longest_busy = 0.0
        self.passes = 0
        # Added from inside a task, the instrument starts in the middle of a pass.
        self._since: float | None = time.perf_counter() if running else None
        self._busy_since = time.process_time()

    def after_io_wait(self, timeout: float) -> None:
        """A pass starts running tasks."""
        self._since = time.perf_counter()
        self._busy_since = time.process_time()

    def before_io_wait(self, timeout: float) -> None:
        """A pass is over: the loop looks for I/O again."""
        self.end_pass()

    def end_pass(self) -> None:
        """Count the pass running now, if any, as over (also when the measure ends)."""
        if self._since is not None:
            self.longest = max(self.longest, time.perf_counter() - self._since)
            self.longest_busy = max(self.longest_busy, time.process_time() - self._busy_since)
            self.passes += 1
            self._since = None


@contextlib.contextmanager
def measure_stalls() -> Iterator[LoopStalls]:
    """`with measure_stalls() as stalls:` … `stalls.longest`, `stalls.longest_busy` (seconds);
    inside `trio.run`."""
    stalls = LoopStalls(running=True)
    trio.lowlevel.add_instrument(stalls)
    try:
        yield stalls
    finally:
        trio.lowlevel.remove_instrument(stalls)
        stalls.end_pass()
