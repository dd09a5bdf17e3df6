"""Stop signals (SIGINT, SIGTERM) as the `Interrupt` of a command or of an API call."""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from types import FrameType

import trio

from overbrainer.events.interrupt import Interrupt
from overbrainer.events.stop_signals import STOP_SIGNALS, note_stop, noting_handler
from overbrainer.model.error_groups import unwrapped

log = logging.getLogger(__name__)


async def _watch_signals(receiver: AsyncIterator[int], on_signal: Callable[[], None]) -> None:
    async for _ in receiver:
        on_signal()


# SIGTERM (`kill`, a container or service stop) is a Ctrl-C too (STOP_SIGNALS): the stage drains
# what is in flight, prints its summary and records its history line instead of dying mid-write.


@contextlib.contextmanager
def _absorbed_once(came: Callable[[], bool], process_exits: bool) -> Iterator[None]:
    """Inside, a stop signal that reaches Python's handler goes to the one it replaced, unless
    `came()`: then it is absorbed. Leaving after one came, the signals stay ignored when
    `process_exits` (the command line); otherwise the handlers found are put back.

    Trio's receiver, on leaving, gives back the handler it found and raises the signals still
    queued in it; this handler is the one it finds, so a Ctrl-C pressed during the orderly exit
    cannot turn into a KeyboardInterrupt that hides the exit's own error line. Where the one
    replaced was the default action (SIGTERM's), the signal is a Ctrl-C instead: the default
    would kill the process mid-write, and leaving, it is only noted (the exit code says 130).
    """
    # None: a handler not set from Python, which cannot be set back; the default stands in.
    previous: dict[int, Callable[[int, FrameType | None], object] | int] = {
        signum: signal.getsignal(signum) or signal.SIG_DFL for signum in STOP_SIGNALS
    }

    def handler(signum: int, frame: FrameType | None) -> None:
        if came():
            return
        prior = previous[signum]
        if callable(prior):
            prior(signum, frame)
        elif prior != signal.SIG_IGN:
            if process_exits:
                note_stop()
            raise KeyboardInterrupt

    for signum in STOP_SIGNALS:
        signal.signal(signum, handler)
    try:
        yield
    finally:
        for number, prior in previous.items():
            if not process_exits:
                # An API call returns to its caller's program, which keeps its own handlers.
                signal.signal(number, prior)
            elif came():
                # `SIG_IGN`, not a Python handler, once the exit began: Python resets its own
                # handlers to the default one while it finalizes, but leaves an ignored signal
                # ignored.
                signal.signal(number, signal.SIG_IGN)
            else:
                signal.signal(number, noting_handler if prior == signal.SIG_DFL else prior)


@contextlib.asynccontextmanager
async def on_stop_signals(
    on_signal: Callable[[], None], *, process_exits: bool = True
) -> AsyncIterator[bool]:
    """Call `on_signal` for each SIGINT or SIGTERM inside; yields False when not catchable.

    Once one came, the orderly exit it began is never cut short: later signals, the ones still
    queued when leaving included, are absorbed. With `process_exits` (the command line) they
    stay absorbed for the rest of the process and the signal is noted for its exit code 130;
    without (an API call inside a caller's program), the caller's handlers are put back.
    """
    came = False

    def noted() -> None:
        nonlocal came
        came = True
        if process_exits:
            note_stop()  # the process exits 130, whatever the flow makes of it
        on_signal()

    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(_absorbed_once(lambda: came, process_exits))
            receiver = stack.enter_context(trio.open_signal_receiver(*STOP_SIGNALS))
        except (RuntimeError, ValueError) as error:
            log.warning("cannot catch Ctrl-C: %s", error)
            yield False
            return
        async with unwrapped(), trio.open_nursery() as nursery:
            nursery.start_soon(_watch_signals, receiver, noted)
            try:
                yield True
            finally:
                nursery.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def signal_interrupt(*, process_exits: bool = True) -> AsyncIterator[Interrupt]:
    """An `Interrupt` fired by each stop signal while inside (see `on_stop_signals`); one that
    is `off` (Ctrl-C behaves as usual) where the signals cannot be caught (not the main thread)."""
    interrupt = Interrupt()
    async with on_stop_signals(interrupt.fire, process_exits=process_exits) as caught:
        yield interrupt if caught else Interrupt(off=True)
