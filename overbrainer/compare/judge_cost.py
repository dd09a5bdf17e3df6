"""What the judge's requests cost: each held to the command's spend cap, counted, recorded."""

from __future__ import annotations

import logging
from pathlib import Path

import attrs
import trio

from overbrainer.compare.report import JudgeUsage
from overbrainer.events.types import Stage, StageStats
from overbrainer.llm import Completion, CompletionRequest, LlmError, ProtocolClient, RetryHalted
from overbrainer.model.usage import Price, Usage
from overbrainer.pipeline.money import TokenRates, token_rates
from overbrainer.pipeline.spend import SpendCap, counted_usage, worst_usage
from overbrainer.pipeline.unreadable import UnreadableReplies
from overbrainer.storage import HistoryRecord, HistoryStatus, append_history, utc_now

log = logging.getLogger(__name__)

HISTORY_BOUND = 5.0
"""Seconds a cancelled judging waits for its history line to be written."""


@attrs.define
class _CapGate:
    """The retry `Gate` of one judge request: closed once the cap refuses its next attempt."""

    unreadable: UnreadableReplies
    _shut: trio.Event = attrs.Factory(trio.Event)

    @property
    def closed(self) -> bool:
        """True once the cap refused the next attempt."""
        return self._shut.is_set()

    def close(self) -> None:
        """No further attempt: the cap no longer covers it."""
        self._shut.set()

    async def wait_closed(self) -> None:
        """Return once closed."""
        await self._shut.wait()

    async def before_retry(self) -> None:
        """A retry after a paid attempt waits for room under the cap; refused, it closes."""
        if not await self.unreadable.room():
            self.close()


class CapRefused(Exception):
    """The spend cap refused the judge's next request: no new request starts."""


@attrs.define
class JudgeSpend:
    """The judge's requests of one command: reserved under the cap, settled, counted.

    `stats` holds the verdicts written (`done`), the questions already judged by an earlier
    command (`skipped`), a question whose request failed (`failed`), and the tokens and cost
    of every judge request of this command (a resumed rejudge counts only its own).
    """

    cap: SpendCap = attrs.Factory(SpendCap)
    price: Price | None = None
    stats: StageStats = attrs.Factory(StageStats)
    estimated: bool = False
    """Some reply had no usage: its tokens and cost are estimated from its text."""
    started_at: str = attrs.Factory(utc_now)
    rates: TokenRates = attrs.field(init=False)
    """`price` per token, exact: what the cap counts per request."""

    @rates.default
    def _rates(self) -> TokenRates:
        return token_rates(self.price)

    async def complete(self, client: ProtocolClient, request: CompletionRequest) -> Completion:
        """One judge request, its retries included; CapRefused when the cap refuses it.

        Its worst case is reserved before it starts and settled with the reply's usage (or
        the estimate when the reply has none); a request that fails releases it. A 2xx reply
        that cannot be read was paid for all the same: each counts its prompt and its whole
        `max_tokens`, and its retry goes on only while the cap still covers it.
        """
        price, rates = self.price, self.rates
        reservation = await self.cap.reserve(rates.cost(worst_usage(request)))
        if reservation is None:
            raise CapRefused()

        def count_unreadable(usage: Usage) -> None:
            self.stats = self.stats.add_usage(usage, price)
            self._say_estimated(
                "judge: a paid reply could not be read: counted as its prompt and its whole "
                "max_tokens, marked `(estimated)`"
            )

        unreadable = UnreadableReplies(request, reservation, rates, count_unreadable)
        gate = _CapGate(unreadable)

        def on_retry(_attempt: int, error: Exception, _wait: float) -> None:
            if not unreadable.retrying(error):
                gate.close()

        with reservation:
            try:
                completion = await client.complete(request, on_retry, gate=gate)
            except RetryHalted as halted:  # the cap refused the retry of an unreadable reply
                unreadable.settle(halted.__cause__)
                raise CapRefused() from None
            except LlmError as error:
                unreadable.settle(error)
                raise
            usage, estimated = counted_usage(request, completion)
            reservation.settle(rates.cost(usage), estimated=estimated)
        self.stats = self.stats.add_usage(usage, price)
        if estimated:
            self._say_estimated(
                "judge: a reply had no token usage: its tokens and cost are estimated "
                "from its text (UTF-8 bytes / 3), marked `(estimated)`"
            )
        return completion

    def _say_estimated(self, warning: str) -> None:
        """Mark the judging's figures estimated; the first reason is said once."""
        if not self.estimated:
            self.estimated = True
            log.warning(warning)

    def count(self, *, done: int = 0, skipped: int = 0, failed: int = 0) -> None:
        """Add to the verdicts written, the ones found done, the questions failed."""
        s = self.stats
        self.stats = attrs.evolve(
            s, done=s.done + done, skipped=s.skipped + skipped, failed=s.failed + failed
        )

    def spent(self) -> float | None:
        """USD this command's judge requests cost so far; None when the price is unknown."""
        return None if self.price is None else self.stats.cost or 0.0

    def usage(self) -> JudgeUsage:
        """The report's figures: this command's judge requests."""
        usage = self.stats.usage
        return JudgeUsage(
            usage.input_tokens,
            usage.output_tokens,
            self.stats.cost,
            self.estimated,
            self.stats.skipped,
        )

    def history_record(
        self, provider: str, model: str, status: HistoryStatus, reason: str | None = None
    ) -> HistoryRecord:
        """The `judge` line of `.overbrainer/history.jsonl` for this judging."""
        record = HistoryRecord.from_stats(
            Stage.JUDGE, self.started_at, utc_now(), status, provider, model, self.stats
        )
        return attrs.evolve(record, cost_estimated=self.estimated, reason=reason)


async def record_judging(path: Path, record: HistoryRecord, *, cancelled: bool = False) -> None:
    """Append the judging's history line; when cancelled, shielded and bounded in time."""
    if not cancelled:
        await trio.to_thread.run_sync(append_history, path, record)
        return
    with trio.move_on_after(HISTORY_BOUND, shield=True) as bound:
        await trio.to_thread.run_sync(append_history, path, record, abandon_on_cancel=True)
    if bound.cancelled_caught:
        log.warning("the judge's history line was not written within %gs", HISTORY_BOUND)
