"""The live progress bar on a terminal (a running stage's, a followed training job's), drawn
with rich, refreshed by Trio.

rich is imported when a bar is drawn (`stderr_console`, `tick`, `_print_above`), not with the
command line: most commands never draw one (docs/testing.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs
import trio

from overbrainer.events.types import (
    ConcurrencyChanged,
    Event,
    ItemDone,
    ItemFailed,
    RateLimitWait,
    RunWatched,
    Stage,
    StageFinished,
    StageStarted,
)
from overbrainer.model.pod_status import duration_words
from overbrainer.ui.bar_frame import two_lines
from overbrainer.ui.logs import print_above
from overbrainer.ui.progress import per_second, rate_words
from overbrainer.ui.train_bar import TrainTally

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live

REFRESH_PERIOD = 0.1
"""Seconds between two redraws of a live bar (10 Hz at most)."""

UNITS: dict[Stage, tuple[str, str | None]] = {
    Stage.SUBTOPICS: ("topics", "subtopics"),
    Stage.QUESTIONS: ("subtopics", "questions"),
    Stage.ANSWERS: ("answers", None),
    Stage.QUALITY: ("answers", "scores"),
}
"""Each stage with a bar: its item, and the records it writes where they are of another kind.

Split has none: it publishes no item events and ends at once; its summary line says it all.
"""


@attrs.define
class StageTally:
    """What the bar of one stage shows, counted from its events."""

    stage: Stage
    total: int
    started: float
    finished: int = 0
    worked: int = 0
    """Items ended by a request in this run (skipped ones are not), for the rate."""
    skipped: int = 0
    failed: int = 0
    retries: int = 0
    written: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    ended: float | None = None
    concurrency: int | None = None
    """The adaptive limit of the stage's model, once it moved."""
    resumes_at: float | None = None
    """When sending resumes after the last announced pause for the provider's rate limit."""

    def apply(self, event: Event) -> None:
        """Count one item event of this stage."""
        match event:
            case ItemDone(stage=stage) if stage is not self.stage:
                pass
            case ItemDone(usage=None):
                self.skipped += 1
                self._finish(worked=False)
            case ItemDone(usage=usage, cost=cost, written=written):
                assert usage is not None
                self.input_tokens += usage.input_tokens
                self.output_tokens += usage.output_tokens
                if cost is not None:
                    self.cost = (self.cost or 0.0) + cost
                self.written += written or 0
                self._finish(worked=True)
            case ItemFailed(stage=stage) if stage is not self.stage:
                pass
            case ItemFailed(retryable=True):
                self.retries += 1
            case ItemFailed():
                self.failed += 1
                self._finish(worked=True)
            case _:
                pass

    def _finish(self, worked: bool) -> None:
        if self.finished < self.total:
            self.finished += 1
        if worked:
            self.worked += 1

    def rate(self, now: float) -> float | None:
        """Items a second ended by requests since the stage started; None before the first."""
        return per_second(self.worked, self.started, self.ended if self.ended is not None else now)

    def eta(self, now: float) -> float | None:
        """Seconds left at the current rate; None while the rate is unknown."""
        rate = self.rate(now)
        if rate is None:
            return None
        return (self.total - self.finished) / rate

    def count_words(self) -> str:
        """`12/30 answers`, or `4/10 subtopics → 120 questions` where units differ."""
        unit, output = UNITS[self.stage]
        words = f"{self.finished}/{self.total} {unit}"
        if output is not None:
            words += f" → {self.written} {output}"
        return words

    def time_words(self, now: float) -> str:
        """`2.4/s, ETA 8s` while running (`2.4/s, rate limit, resuming in 41s` while it waits
        for the provider's rate limit), `2.4/s, took 12s` once ended."""
        rate = self.rate(now)
        speed = "–/s" if rate is None else rate_words(rate)
        if self.ended is not None:
            return f"{speed}, took {duration_words(self.ended - self.started)}"
        if self.resumes_at is not None and now < self.resumes_at:
            resume = duration_words(math.ceil(self.resumes_at - now))
            return f"{speed}, rate limit, resuming in {resume}"
        eta = self.eta(now)
        return f"{speed}, ETA {'–' if eta is None else duration_words(math.ceil(eta))}"

    def spend_words(self) -> str:
        """Tokens, spend, failures and retries so far."""
        cost = "cost unknown" if self.cost is None else f"${self.cost:.4f}"
        retries = "1 retry" if self.retries == 1 else f"{self.retries} retries"
        words = (
            f"tokens {self.input_tokens} in, {self.output_tokens} out · {cost} · "
            f"{self.failed} failed · {retries}"
        )
        if self.skipped:
            words += f" · {self.skipped} skipped"
        if self.concurrency is not None:
            words += f" · concurrency {self.concurrency}"
        return words

    def renderable(self, now: float) -> RenderableType:
        """Two lines: the bar with counts, rate and ETA; then tokens, spend, failures, retries."""
        words = f"{self.count_words()}  {self.time_words(now)}"
        return two_lines(str(self.stage), self.total, self.finished, words, self.spend_words())


Tally = StageTally | TrainTally


def stderr_console() -> Console:
    """The console a bar draws on by default: stderr, no highlighting of numbers or paths."""
    from rich.console import Console

    return Console(stderr=True, highlight=False)


class BarScreen:
    """The live bar of the running stage or followed training job: an observer of the bus,
    redrawn by `run` at most at 10 Hz.

    rich's own refresh thread stays off (`auto_refresh=False`): `run` is a Trio task.
    """

    def __init__(self, console: Console, clock: Callable[[], float] = trio.current_time) -> None:
        self.console = console
        self.clock = clock
        self.tally: Tally | None = None
        self.live: Live | None = None
        self._over = trio.Event()

    def event(self, bus: int, event: Event) -> None:
        """Count one event (called synchronously by the bus, so the tally is never behind)."""
        tally = self.tally
        match event:
            case StageStarted(stage=stage, total=total):
                self.freeze()
                if stage in UNITS:
                    self.tally = StageTally(stage, total, self.clock())
            case RunWatched(job=job):
                # Only training has a bar: an export's or compare's job keeps its lines.
                self.freeze()
                if job is None:
                    self.tally = TrainTally(self.clock())
            case _ if isinstance(tally, TrainTally):
                tally.apply(event, self.clock())
            case ConcurrencyChanged(new=new) if tally is not None:
                tally.concurrency = new
            case RateLimitWait(seconds=seconds) if isinstance(tally, StageTally):
                tally.resumes_at = self.clock() + seconds
            case StageFinished(stage=stage) if tally is not None:
                if tally.stage is stage:
                    tally.ended = self.clock()
            case _ if tally is not None:
                tally.apply(event)
            case _:
                pass

    def closed(self, bus: int) -> None:
        """The bus closed: `run` draws the last frame and returns."""
        self._over.set()

    def tick(self) -> None:
        """Redraw the bar (starting it if needed); an ended stage's bar is frozen."""
        tally = self.tally
        if tally is None:
            return
        if isinstance(tally, StageTally) and tally.ended is not None:
            self.freeze()
            return
        if self.live is None:
            from rich.live import Live

            self.live = Live(
                console=self.console,
                auto_refresh=False,
                transient=False,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self.live.start()
            print_above(self._print_above)
        self.live.update(tally.renderable(self.clock()), refresh=True)

    def freeze(self) -> None:
        """Leave the bar's last frame on screen and hand the terminal back (cursor shown)."""
        tally, live = self.tally, self.live
        self.tally = self.live = None
        if tally is None:
            return
        if isinstance(tally, TrainTally):
            tally.last = True
        frame = tally.renderable(self.clock())
        if live is None:
            self.console.print(frame)
            return
        print_above(None)
        live.update(frame)
        live.stop()

    def _print_above(self, line: str) -> None:
        from rich.text import Text

        self.console.print(Text.from_ansi(line), soft_wrap=True)

    async def run(self) -> None:
        """Redraw every `REFRESH_PERIOD` until the bus closes; the last frame stays."""
        try:
            while not self._over.is_set():
                with trio.move_on_after(REFRESH_PERIOD):
                    await self._over.wait()
                self.tick()
        finally:
            self.freeze()
