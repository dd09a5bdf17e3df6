"""`StageRun`: one running stage's counters, events and admission of new items."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator
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
from overbrainer.llm import (
    Completion,
    CompletionRequest,
    LlmError,
    OnRetry,
    RepeatedError,
    RetryHalted,
    StatusError,
    retry_message,
)
from overbrainer.model.errors import OverbrainerError
from overbrainer.model.usage import Price, Usage
from overbrainer.pipeline.context import StageContext, StageRole, stage_role_name
from overbrainer.pipeline.money import token_rates
from overbrainer.pipeline.spend import counted_usage, worst_usage
from overbrainer.pipeline.unreadable import UnreadableReplies
from overbrainer.storage import SplitCounts

log = logging.getLogger(__name__)

T = TypeVar("T")

REPEAT_LIMIT = 3
"""Items in a row failing with the same client error (HTTP 400, …) that stop the stage."""


@attrs.frozen
class Paid:
    """A reply and what it counted: its usage (estimated when it had none) and cost."""

    completion: Completion
    usage: Usage
    cost: float | None
    estimated: bool = False


@attrs.define
class _Lost:
    """The usage and cost of a request's attempts that were paid but could not be read."""

    usage: Usage | None = None
    cost: float | None = None

    def add(self, usage: Usage, cost: float | None) -> None:
        """One more unreadable attempt."""
        self.usage = usage if self.usage is None else self.usage + usage
        if cost is not None:
            self.cost = cost if self.cost is None else self.cost + cost


@attrs.define
class _RequestGate:
    """The `Gate` of one request: the stage's, closed too once the cap refuses its retry."""

    run: StageRun
    unreadable: UnreadableReplies
    capped: bool = False

    @property
    def closed(self) -> bool:
        """True once the stage is closed or the cap refused the next attempt."""
        return self.capped or self.run.closed

    async def wait_closed(self) -> None:
        """Return once closed."""
        if not self.capped:
            await self.run.wait_closed()

    async def before_retry(self) -> None:
        """A retry after a paid attempt waits for room under the cap; refused, it closes."""
        if not await self.unreadable.room():
            self.refused()

    def refused(self) -> None:
        """The cap refused the next attempt: the item is left for the next run."""
        self.capped = True
        self.run.held_back = True


class StageRun:
    """One running stage: its stats, the events it publishes and its admission of new items."""

    def __init__(self, ctx: StageContext, stage: Stage) -> None:
        self.ctx = ctx
        self.stage = stage
        role_name = stage_role_name(stage)
        self.role: StageRole | None = None if role_name is None else ctx.roles.get(role_name)
        # At a known price a stage that sends nothing cost $0, not an unknown amount.
        self.stats = StageStats(cost=None if self.price is None else 0.0)
        self.rates = token_rates(self.price)
        """The role's price per token, exact: what the spend cap counts per request."""
        self.in_flight = 0
        self.held_back = False
        self.estimated = False
        """Whether some counted usage was estimated (a reply without usage)."""
        self.split: SplitCounts | None = None
        self._split_line: str | None = None
        self.stop_cause: LlmError | None = None
        """The error that stopped the stage (401/403, an unreachable provider, …), if any."""
        self.failure: OverbrainerError | None = None
        """The error a stage that ran to its end fails with after its summary (a split that
        left no train example), if any."""
        self.before_send: Callable[[], Awaitable[None]] | None = None
        """Awaited before each request is sent (a forced stage saves its new force there)."""
        self._halted = trio.Event()
        self._repeated: tuple[str, int] = ("", 0)
        self._unreadable_said = False

    @property
    def closed(self) -> bool:
        """Whether new attempts are barred: Ctrl-C came or the stage is stopping (a `Gate`)."""
        return self._halted.is_set() or self.ctx.interrupt.caught

    async def wait_closed(self) -> None:
        """Return once new attempts are barred (waits for backoff and `Retry-After` end then)."""
        await self._halted.wait()

    async def before_retry(self) -> None:
        """A retry of the stage's own (not a single request's) starts after its backoff."""

    def halt(self) -> None:
        """Bar every new request and retry of this stage, at once."""
        self._halted.set()

    def stop(self, cause: LlmError) -> None:
        """Stop the stage for `cause` (the first one counts): nothing new starts after it."""
        if self.stop_cause is None:
            self.stop_cause = cause
        self.halt()

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
        if self.closed:
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

    async def complete(self, request: CompletionRequest, item_id: str) -> Paid | None:
        """One paid request of the stage's role, its retries included; None: not sent or not
        retried (the cap refused it, or Ctrl-C or a stop of the stage barred it).

        Its worst-case cost is reserved before it starts and settled with what the reply
        counts (`pipeline/spend.py` has the rule); an error releases the reservation. A 2xx
        reply that cannot be read was paid for all the same: each is counted by
        `unreadable_usage`, and its retry goes on only while the cap still covers it.
        """
        assert self.role is not None, "this stage has no role"
        rates = self.rates
        reservation = await self.ctx.spend.reserve(rates.cost(worst_usage(request)))
        if reservation is None:
            self.held_back = True
            return None
        lost = _Lost()

        def count_unreadable(usage: Usage) -> None:
            self._warn_unreadable()
            lost.add(usage, self.add_usage(usage))
            self.estimated = True  # said by its own warning, not the one of replies without usage

        unreadable = UnreadableReplies(request, reservation, rates, count_unreadable)
        gate = _RequestGate(self, unreadable)

        def on_retry(_attempt: int, error: Exception, wait: float) -> None:
            if not unreadable.retrying(error):
                gate.refused()
                return
            self.retrying(item_id, retry_message(error, wait))

        with reservation:
            if self.closed:
                return None
            if self.before_send is not None:
                await self.before_send()
            try:
                completion = await self.role.client.complete(request, on_retry, gate=gate)
            except RetryHalted as halted:
                unreadable.settle(halted.__cause__)  # barred right after one on_retry never saw
                return None  # Ctrl-C, a stop or the cap barred its retry: left for the next run
            except LlmError as error:
                unreadable.settle(error)
                raise
            usage, estimated = counted_usage(request, completion)
            reservation.settle(rates.cost(usage), estimated=estimated)
        cost = self.add_usage(usage, estimated)
        if lost.usage is None:
            return Paid(completion, usage, cost, estimated)
        total = lost.cost if cost is None or lost.cost is None else lost.cost + cost
        return Paid(completion, lost.usage + usage, total, True)

    def _warn_unreadable(self) -> None:
        if not self._unreadable_said:
            self._unreadable_said = True
            log.warning(
                "%s: a paid reply could not be read: counted as its prompt and its whole "
                "max_tokens, marked `(estimated)`",
                self.stage,
            )

    def add_usage(
        self, usage: Usage, estimated: bool = False, price: Price | None = None
    ) -> float | None:
        """Count one attempt's usage at `price` (default: the role's); its cost when known."""
        price = self.price if price is None else price
        self.stats = self.stats.add_usage(usage, price)
        if estimated and not self.estimated:
            self.estimated = True
            log.warning(
                "%s: a reply had no token usage: its tokens and cost are estimated "
                "from its text (UTF-8 bytes / 3), marked `(estimated)`",
                self.stage,
            )
        return None if price is None else price.cost(usage)

    def done(
        self,
        item_id: str,
        usage: Usage,
        cost: float | None,
        excluded: bool = False,
        estimated: bool = False,
        written: int | None = None,
    ) -> None:
        """The item ended with output; `usage` and `cost` were added by `add_usage` already.

        `written`: the records of another kind it added (subtopics, questions), for progress.
        """
        self._repeated = ("", 0)
        self.stats = self.stats.one_done(excluded)
        done = ItemDone(self.stage, item_id, usage, cost, excluded, estimated, written)
        self.ctx.bus.publish(done)

    def skipped(self, item_id: str | None = None, count: int = 1) -> None:
        """Items already stored: counted, and announced when `item_id` is given."""
        self.stats = attrs.evolve(self.stats, skipped=self.stats.skipped + count)
        if item_id is not None:
            self.ctx.bus.publish(ItemDone(self.stage, item_id))

    def failed(self, item_id: str, error: Exception) -> None:
        """The item failed for good (counted); an error fatal for the stage stops it too (see
        `stop`), and the next run asks the item again.

        An error that every request would get (HTTP 401-404, `refuses_every_request`) is the
        stage's failure, not the item's: it is not counted, nor are the same errors of the
        requests still in flight, as the reference's spec says: "A fatal error aborts all
        tasks, saves the completions that had already finished, and stops the stage" and "A
        non-fatal final error gives `failed += 1`" (reference-pipeline.md §9.2). We differ in
        one way, kept on purpose: the requests in flight are not cancelled ("the requests
        still in flight are cancelled", §6.4) but finish and are saved, since they are paid
        for. The same client error for `REPEAT_LIMIT` items in a row (a wrong model, a bad
        request) stops the stage too; those items count, as the reference counts them.
        """
        if isinstance(error, LlmError) and error.refuses_every_request:
            self.stop(error)
            return
        self.stats = attrs.evolve(self.stats, failed=self.stats.failed + 1)
        self.ctx.bus.publish(ItemFailed(self.stage, item_id, str(error), retryable=False))
        if isinstance(error, LlmError) and error.stops_stage:
            self.stop(error)
            return
        if isinstance(error, StatusError) and not error.retryable:
            last, count = self._repeated
            count = count + 1 if error.message == last else 1
            self._repeated = (error.message, count)
            if count >= REPEAT_LIMIT:
                self.stop(RepeatedError(error, count))
        else:
            self._repeated = ("", 0)

    def retrying(self, item_id: str, message: str) -> None:
        """An attempt failed and the item will be tried again in this run."""
        self.ctx.bus.publish(ItemFailed(self.stage, item_id, message, retryable=True))

    async def each(self, items: Iterable[T], work: Callable[[T], Awaitable[None]]) -> None:
        """`work(item)` for each item, `concurrency` at once, while new items are admitted.

        An item whose retry was barred (`RetryHalted`) is left as it is, for the next run.
        """
        slots = trio.Semaphore(self.ctx.settings.pipeline.concurrency)

        async def one(item: T) -> None:
            try:
                with self.item_in_flight():
                    await work(item)
            except RetryHalted:
                pass  # its next attempt was barred: the item is left for the next run
            finally:
                slots.release()

        async with trio.open_nursery() as nursery:
            for item in items:
                if not self.admitting():
                    break
                await slots.acquire()
                if not self.admitting():
                    slots.release()
                    break
                nursery.start_soon(one, item)

    @contextlib.contextmanager
    def item_in_flight(self) -> Iterator[None]:
        """Count an item as in flight while inside: from its request to its stored reply. A
        first Ctrl-C waits (up to `drain_secs`) for these; with none, it cancels at once."""
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1

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
        return summary_line(self.stage, self.stats, estimated=self.estimated)


def summary_line(stage: Stage, stats: StageStats, *, estimated: bool = False) -> str:
    """`{stage}: N done, N skipped, N failed, N excluded; tokens N in, N out; cost …`.

    `(estimated)` ends a known cost when some reply had no usage and its tokens were estimated;
    an unknown cost is not an estimate, so `cost unknown` never carries it.
    """
    cost = "cost unknown" if stats.cost is None else f"cost ${stats.cost:.4f}"
    if estimated and stats.cost is not None:
        cost += " (estimated)"
    return (
        f"{stage}: {stats.done} done, {stats.skipped} skipped, {stats.failed} failed, "
        f"{stats.excluded} excluded; tokens {stats.usage.input_tokens} in, "
        f"{stats.usage.output_tokens} out; {cost}"
    )


Body = Callable[[StageContext, StageRun], Awaitable[None]]
"""A stage body."""
