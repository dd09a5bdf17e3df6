"""`StageRun`: one running stage's counters, events and admission of new items."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

import attrs
import trio

from overbrainer.events.types import (
    ItemDone,
    ItemFailed,
    Stage,
    StageModel,
    StageStarted,
    StageStats,
)
from overbrainer.llm.errors import LlmError
from overbrainer.llm.retry import OnRetry, retry_message
from overbrainer.llm.types import CompletionRequest
from overbrainer.model.usage import Price, Usage
from overbrainer.pipeline.context import StageContext, StageRole, stage_role_name
from overbrainer.storage.history import SplitCounts

T = TypeVar("T")


class StageRun:
    """One running stage: its stats, the events it publishes and its admission of new items."""

    def __init__(self, ctx: StageContext, stage: Stage) -> None:
        self.ctx = ctx
        self.stage = stage
        role_name = stage_role_name(stage)
        self.role: StageRole | None = None if role_name is None else ctx.roles.get(role_name)
        self.stats = StageStats()
        # The reference's event tally, used for the history of a stopped or interrupted stage.
        self.tally = StageStats()
        self.in_flight = 0
        self.held_back = False
        self.split: SplitCounts | None = None
        self._split_line: str | None = None

    @property
    def price(self) -> Price | None:
        """The stage role's price, when known."""
        return None if self.role is None else self.role.price

    def start(self, total: int) -> None:
        """Publish `StageStarted` (and `StageModel` for a stage with a role)."""
        self.ctx.bus.publish(StageStarted(self.stage, total))
        if self.role is not None:
            self.ctx.bus.publish(StageModel(self.stage, self.role.role.model))

    def admitting(self) -> bool:
        """Whether a new request may start: not after Ctrl-C, nor once the cap is reached."""
        if self.ctx.interrupt.caught:
            return False
        if self.ctx.spend.reached:
            self.held_back = True
            return False
        return True

    def request(
        self,
        prompt: str,
        system: str | None = None,
        *,
        json_list: bool = False,
        max_tokens: int | None = None,
    ) -> CompletionRequest:
        """A request with the stage role's knobs."""
        assert self.role is not None, "this stage has no role"
        role = self.role.role
        return CompletionRequest(
            prompt=prompt,
            system=system,
            max_tokens=role.max_tokens if max_tokens is None else max_tokens,
            temperature=role.temperature,
            reasoning=role.reasoning,
            effort=role.reasoning_effort,
            thinking_budget=role.thinking_budget,
            json_list=json_list,
        )

    def on_retry(self, item_id: str) -> OnRetry:
        """A retry callback publishing «{error}; retrying in {secs}s» for `item_id`."""

        def publish(_attempt: int, error: Exception, wait: float) -> None:
            self.retrying(item_id, retry_message(error, wait))

        return publish

    def add_usage(self, usage: Usage) -> float | None:
        """Count one attempt's usage at the role's price; its cost when the price is known."""
        price = self.price
        self.stats = self.stats.add_usage(usage, price)
        cost = None if price is None else price.cost(usage)
        self.ctx.spend.add(cost)
        return cost

    def done(
        self,
        item_id: str,
        usage: Usage,
        cost: float | None,
        excluded: bool = False,
        written: int | None = None,
    ) -> None:
        """The item ended with output; `usage` and `cost` were added by `add_usage` already.

        `written`: the records of another kind it added (subtopics, questions), for progress.
        """
        if excluded:
            self.stats = attrs.evolve(self.stats, excluded=self.stats.excluded + 1)
        else:
            self.stats = attrs.evolve(self.stats, done=self.stats.done + 1)
        self._publish_done(ItemDone(self.stage, item_id, usage, cost, excluded, written))

    def skipped(self, item_id: str | None = None, count: int = 1) -> None:
        """Items already stored: counted, and announced when `item_id` is given."""
        self.stats = attrs.evolve(self.stats, skipped=self.stats.skipped + count)
        self.tally = attrs.evolve(self.tally, skipped=self.tally.skipped + count)
        if item_id is not None:
            self.ctx.bus.publish(ItemDone(self.stage, item_id))

    def failed(self, item_id: str, error: Exception) -> None:
        """The item failed for good; an error fatal for the stage is raised again."""
        if isinstance(error, LlmError) and error.stops_stage:
            raise error
        self.stats = attrs.evolve(self.stats, failed=self.stats.failed + 1)
        self.tally = attrs.evolve(self.tally, failed=self.tally.failed + 1)
        self.ctx.bus.publish(ItemFailed(self.stage, item_id, str(error), retryable=False))

    def retrying(self, item_id: str, message: str) -> None:
        """An attempt failed and the item will be tried again in this run."""
        self.ctx.bus.publish(ItemFailed(self.stage, item_id, message, retryable=True))

    def _publish_done(self, event: ItemDone) -> None:
        if event.usage is not None:
            price_known = event.cost is not None
            tally = self.tally.add_usage(event.usage)
            if price_known:
                tally = attrs.evolve(tally, cost=(tally.cost or 0.0) + (event.cost or 0.0))
            self.tally = attrs.evolve(tally, done=tally.done + 1)
        self.ctx.bus.publish(event)

    async def each(self, items: Iterable[T], work: Callable[[T], Awaitable[None]]) -> None:
        """`work(item)` for each item, `concurrency` at once, while new items are admitted."""
        slots = trio.Semaphore(self.ctx.settings.pipeline.concurrency)

        async def one(item: T) -> None:
            try:
                await work(item)
            finally:
                self.in_flight -= 1
                slots.release()

        async with trio.open_nursery() as nursery:
            for item in items:
                if not self.admitting():
                    break
                await slots.acquire()
                if not self.admitting():
                    slots.release()
                    break
                self.in_flight += 1
                nursery.start_soon(one, item)

    def finish_split(self, counts: SplitCounts, excluded: int, line: str) -> None:
        """Split's own ending: its stats, its history counts and its summary line."""
        self.stats = StageStats(
            done=counts.train + counts.eval, skipped=counts.orphaned, excluded=excluded
        )
        self.split = counts
        self._split_line = line

    def summary_line(self) -> str:
        """The stage's line on stdout."""
        if self._split_line is not None:
            return self._split_line
        return summary_line(self.stage, self.stats)


def summary_line(stage: Stage, stats: StageStats) -> str:
    """`{stage}: N done, N skipped, N failed, N excluded; tokens N in, N out; cost …`."""
    cost = "cost unknown" if stats.cost is None else f"cost ${stats.cost:.4f}"
    return (
        f"{stage}: {stats.done} done, {stats.skipped} skipped, {stats.failed} failed, "
        f"{stats.excluded} excluded; tokens {stats.usage.input_tokens} in, "
        f"{stats.usage.output_tokens} out; {cost}"
    )


Body = Callable[[StageContext, StageRun], Awaitable[None]]
"""A stage body."""
