"""Stage `answers` through the provider's batch API: submit, record, poll, store, resume.

Every batch is recorded under `.overbrainer/batches/` (`storage/batches.py`): an intent before
it is submitted, its ID the moment the provider returns it. A rerun re-attaches to the recorded
batches instead of submitting their questions again. Answers are stored as the normal stage
stores them, at the batch price (the role's price times the provider's `batch_discount`).
"""

from __future__ import annotations

import functools
import logging
import random
import secrets
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import attrs
import trio

from overbrainer.llm import (
    BatchApi,
    BatchItem,
    BatchResult,
    BatchStatus,
    LlmError,
    NotSubmitted,
    ProtocolClient,
    RetryHalted,
    StatusError,
    batch_api,
    with_retry,
)
from overbrainer.model.usage import Price
from overbrainer.pipeline.answers import (
    build_example,
    hiding_warning,
    pending_questions,
    read_stored,
    system_prompts,
)
from overbrainer.pipeline.batch_intents import resolve_intent
from overbrainer.pipeline.blocking import appending, read_in_thread, write_in_thread
from overbrainer.pipeline.engine import StageContext, StageRun
from overbrainer.pipeline.money import NO_MONEY, Money, token_rates
from overbrainer.pipeline.reasoning_watch import reasoning_watch
from overbrainer.pipeline.replacing import replacing
from overbrainer.pipeline.spend import Reservation, counted_usage, worst_usage
from overbrainer.storage import (
    BatchRecord,
    Question,
    example_id,
    read_batches,
    read_records,
    remove_batch,
    submitted,
    utc_now,
    write_batch,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

COLLECT = "overbrainer answers --batch"
"""The command that collects (or, with `--cancel`, cancels) the recorded batches."""
JITTER = 0.2
"""Each wait between two looks at the batches is `batch_poll_secs` ± this fraction."""
RECORD_BOUND = 10.0
"""Seconds a cancelled stage still waits for a submitted batch's record to be written."""


class BatchItemFailed(LlmError):
    """A batch item ended without an answer (errored, expired, cancelled): asked next run."""


def discounted(price: Price | None, discount: float) -> Price | None:
    """`price` times `discount`: what an answer costs through the batch API."""
    if price is None:
        return None
    return Price(price.input_per_million * discount, price.output_per_million * discount)


def chunks(api: BatchApi, items: Sequence[BatchItem]) -> list[list[BatchItem]]:
    """`items` cut into batches within the API's request and byte limits, in order."""
    out: list[list[BatchItem]] = []
    current: list[BatchItem] = []
    size = 0
    for item in items:
        item_size = api.size(item)
        if current and (len(current) >= api.max_requests or size + item_size > api.max_bytes):
            out.append(current)
            current, size = [], 0
        current.append(item)
        size += item_size
    if current:
        out.append(current)
    return out


async def batch_answers_stage(ctx: StageContext, run: StageRun) -> None:
    """Collect the recorded batches and submit the questions not answered yet as new ones."""
    await _BatchStage(ctx, run, system_prompts(ctx, ctx.settings.topics)).run(cancel=False)


async def cancel_batches_stage(ctx: StageContext, run: StageRun) -> None:
    """Cancel the recorded batches, storing whatever answers they finished first."""
    await _BatchStage(ctx, run, system_prompts(ctx, ctx.settings.topics)).run(cancel=True)


class _BatchStage:
    """One run of the batch stage: the parent's batch API, its records and its answers."""

    def __init__(self, ctx: StageContext, run: StageRun, systems: dict[str, str]) -> None:
        assert run.role is not None
        self.ctx = ctx
        self.run_ = run
        self.systems = systems
        self.role = run.role.role
        self.provider = run.role.provider
        provider = ctx.settings.provider_of(self.role)
        client = run.role.client
        if not isinstance(client, ProtocolClient):
            raise TypeError("a batch needs a protocol client")
        self.client = client
        kind = provider.batch_kind
        if kind is None:
            raise TypeError("the parent's provider has no batch API")
        self.api = batch_api(kind, client.http, self.role.model, client.dialect)
        self.price = discounted(run.price, provider.discount or 1.0)
        self.rates = token_rates(self.price)
        self.directory = ctx.project.state / "batches"
        self.warning = hiding_warning(provider.protocol, self.role.model)
        self.watch = reasoning_watch(
            run.role.name, self.role.model, self.role.reasoning, self.warning is not None
        )
        self.questions: dict[str, Question] = {}
        self.redo: set[str] = set()
        self.reservations: dict[str, Reservation] = {}
        """The worst-case costs reserved for the batches this run submitted, by batch ID."""
        self.cancelling = False
        """`--cancel`: items the cancel left without an answer are not failures."""
        self.left: list[BatchRecord] = []
        """The batches not collected yet."""

    async def _call(self, what: str, op: Callable[[], Awaitable[T]]) -> T:
        """`op` retried by the role's policy while the stage admits new requests."""
        return await with_retry(self.client.retry, op, self.run_.on_retry(what), gate=self.run_)

    async def run(self, *, cancel: bool) -> None:
        """Re-attach, cancel or submit, then wait for every batch and store its answers."""
        ctx, run = self.ctx, self.run_
        if self.warning is not None and self.role.reasoning:
            log.warning("parent %s: %s", self.role.model, self.warning)
        # Read first, so that a bad data line fails before a force begins.
        stored = await read_in_thread(lambda: read_stored(ctx))
        async with replacing(ctx, self.run_, "answers") as replacement:
            self.redo = set(replacement.pending(ctx.selected_topic_names))
            pending, skipped, gone, self.questions = pending_questions(ctx, self.redo, stored)
            replacement.forget(gone)
            attached = await self._attach()
            waiting = {question for record in attached for question in record.questions}
            new = [] if cancel else [q for q in pending if q.id not in waiting]
            run.skipped(count=skipped)
            run.start(len(new) + len(waiting))
            self.left = attached
            self.cancelling = cancel
            try:
                if cancel:
                    await self._cancel(attached)
                else:
                    await self._submit(new)
                await self._wait()
            except RetryHalted:
                pass  # Ctrl-C or a stop barred the next attempt: the batches keep running
            finally:
                for reservation in self.reservations.values():
                    reservation.release()
                if self.left:
                    self._still_running()

    def _still_running(self) -> None:
        """Say which batches this run leaves running at the provider, and how to collect."""
        log.warning(
            "answers: %d batch(es) with %d question(s) still running at the provider: "
            "collect them with `%s` (or cancel them with `%s --cancel`)",
            len(self.left),
            sum(len(record.questions) for record in self.left),
            COLLECT,
            COLLECT,
        )

    async def _attach(self) -> list[BatchRecord]:
        """The recorded batches of this provider and model; intents are resolved first."""
        records = await read_in_thread(lambda: read_batches(self.directory))
        attached: list[BatchRecord] = []
        for record in records:
            if record.provider != self.provider or record.model != self.role.model:
                log.warning(
                    "batch %s is on %s/%s, not the parent's %s/%s: left as it is",
                    record.id or record.tag,
                    record.provider,
                    record.model,
                    self.provider,
                    self.role.model,
                )
                continue
            if record.id is None:
                resolved = await resolve_intent(self.api, self._call, self.directory, record)
                if resolved is None:
                    continue
                record = resolved
            log.info(
                "answers: re-attached to batch %s (%d question(s))",
                record.id,
                len(record.questions),
            )
            attached.append(record)
        return attached

    async def _cancel(self, records: list[BatchRecord]) -> None:
        for record in records:
            assert record.id is not None
            batch_id = record.id
            await self._call(batch_id, functools.partial(self.api.cancel, batch_id))
            log.info("answers: cancelling batch %s", batch_id)

    async def _submit(self, pending: list[Question]) -> None:
        """Submit `pending` as batches within the spend cap, each added to `left`."""
        run, spend = self.run_, self.ctx.spend
        items = [BatchItem(q.id, run.request(q.text, self.systems[q.topic])) for q in pending]
        for chunk in chunks(self.api, items):
            if run.closed:
                break
            worsts = [self._worst(item) for item in chunk]
            fitting, total = 0, NO_MONEY
            while fitting < len(chunk) and spend.fits(Money(total + worsts[fitting])):
                total = Money(total + worsts[fitting])
                fitting += 1
            if fitting == 0:
                spend.refuse(worsts[0])
                run.held_back = True
                break
            await self._submit_one(chunk[:fitting], total)
            if fitting < len(chunk):
                spend.refuse(worsts[fitting])
                run.held_back = True
                break

    def _worst(self, item: BatchItem) -> Money:
        """The most `item` can cost at the batch price (0 when the price is unknown)."""
        return self.rates.cost(worst_usage(item.request))

    async def _submit_one(self, items: list[BatchItem], worst: Money) -> None:
        """One batch: intent, reservation, submit, record (shielded); added to `left`."""
        run = self.run_
        intent = BatchRecord(
            secrets.token_hex(8),
            self.provider,
            self.role.model,
            tuple(item.custom_id for item in items),
            utc_now(),
        )
        await write_in_thread(lambda: write_batch(self.directory, intent))
        reservation = await self.ctx.spend.reserve(worst)
        if reservation is None:
            await write_in_thread(lambda: remove_batch(self.directory, intent))
            run.held_back = True
            return
        try:
            if run.before_send is not None:
                await run.before_send()  # a new --force is saved before its first batch
            batch_id = await self.api.submit(items, intent.tag)
        except LlmError as error:
            reservation.release()
            if isinstance(error, (StatusError, NotSubmitted)):
                # Refused, or its input never got there: no batch was made, nothing to
                # reconcile, so no intent may strand its questions.
                await write_in_thread(lambda: remove_batch(self.directory, intent))
            # Else (no answer) it may have been made: the intent stays for the next run.
            for item in items:
                run.failed(item.custom_id, error)
            return
        except BaseException:
            reservation.release()
            raise  # cancelled mid-submit: the intent stays, the next run reconciles it
        # Before anything else, even a second Ctrl-C: the record of what was paid for.
        record = attrs.evolve(intent, id=batch_id)
        with trio.move_on_after(RECORD_BOUND, shield=True) as bound:
            await trio.to_thread.run_sync(
                submitted, self.directory, intent, batch_id, abandon_on_cancel=True
            )
        if bound.cancelled_caught:
            log.warning(
                "answers: batch %s was not recorded within %gs; its intent is kept",
                batch_id,
                RECORD_BOUND,
            )
        self.reservations[batch_id] = reservation
        self.left.append(record)
        log.info("answers: submitted batch %s (%d question(s))", batch_id, len(items))

    async def _wait(self) -> None:
        """Poll until every batch in `left` ended and its answers are stored, or the stage
        closes (Ctrl-C): those still running stay in `left`, recorded for the next run."""
        run = self.run_
        poll = self.ctx.settings.pipeline.batch_poll_secs
        while self.left:
            for record in list(self.left):
                assert record.id is not None
                batch_id = record.id
                status = await self._call(batch_id, functools.partial(self.api.status, batch_id))
                if not status.ended:
                    continue
                results = await self._call(
                    batch_id,
                    functools.partial(self.api.results, batch_id, status),
                )
                await self._store(record, status, results)
                self.left.remove(record)
            if not self.left or run.closed:
                return
            with trio.move_on_after(poll * random.uniform(1 - JITTER, 1 + JITTER)):
                await run.wait_closed()
            if run.closed:
                return

    async def _store(
        self, record: BatchRecord, status: BatchStatus, results: list[BatchResult]
    ) -> None:
        """Store an ended batch's answers, count its failures, then drop its record."""
        run, ctx = self.run_, self.ctx
        by_id = {result.custom_id: result for result in results}
        answers_file = ctx.project.data_file("answers")
        answered = await read_in_thread(
            lambda: set(read_records(answers_file, example_id)) - self.redo
        )
        keep_system = ctx.settings.pipeline.include_system_prompt
        paid = NO_MONEY
        unanswered = 0
        async with appending(answers_file) as appender:
            for question_id in record.questions:
                question = self.questions.get(question_id)
                result = by_id.get(question_id)
                if question_id in answered:
                    run.skipped(question_id)  # stored before a crash, by an earlier run
                    continue
                if self.cancelling and (result is None or result.completion is None):
                    unanswered += 1
                    continue
                if result is None or result.completion is None:
                    why = f"batch {status.state}: no result" if result is None else result.error
                    run.failed(question_id, BatchItemFailed(why or "no answer"))
                    continue
                if question is None:
                    log.warning("answers: question %s is gone: its answer is dropped", question_id)
                    continue
                system = self.systems.get(question.topic)
                request = run.request(question.text, system)
                usage, estimated = counted_usage(request, result.completion)
                paid = Money(paid + self.rates.cost(usage))
                cost = run.add_usage(usage, estimated, self.price)
                example = build_example(
                    question,
                    result.completion,
                    self.role,
                    system if keep_system else None,
                    self.warning is not None,
                )
                appender.append(example.to_json())
                run.done(question_id, usage, cost, not example.usable, estimated=estimated)
                kind = example.meta.reasoning_kind
                if self.watch is not None and (stop := self.watch.answered(kind)):
                    run.stop(stop)  # the batches not collected yet stay recorded
        reservation = self.reservations.pop(record.id or "", None)
        if reservation is None:
            ctx.spend.pay(paid)  # submitted by an earlier run
        else:
            reservation.settle(paid)
        await write_in_thread(lambda: remove_batch(self.directory, record))
        if unanswered:
            log.info(
                "answers: batch %s %s: %d question(s) left for the next run",
                record.id,
                status.state,
                unanswered,
            )
        else:
            log.info("answers: batch %s %s: its answers are stored", record.id, status.state)
