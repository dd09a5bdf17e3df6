"""The stage engine: a stage body runs under `run_stage`, which counts, publishes and records it.

API for stage bodies (subtopics, questions, answers, split)
-----------------------------------------------------------
A body is ``async def body(ctx: StageContext, run: StageRun) -> None``. It reads its inputs,
calls ``run.start(total)`` once it knows how many items it will process, handles each item,
and returns. It never prints: the driver makes the summary line and records the history, and
the flow (``overbrainer/flows/pipeline.py``) prints the line.

``StageContext`` (one per stage execution; ``run`` builds a new one for each stage):
- ``project`` (paths: ``project.data_file("answers")``, ``project.prompts``, …), ``settings``;
- ``topics``: the selected topics in config order (``--topic``, repeatable; all when unset);
  ``selected_topic_names``; ``topic_filter`` (the ``--topic`` names, or None for all);
- ``force``: ``--force`` was given;
- ``template(name)``: the parsed prompt template (``"subtopics.txt"``, ``"questions.txt"``,
  ``"answer_system.txt"``), loaded when the context was built;
- ``roles``: ``{"generator": RoleClient, "parent": …, "embedder"?: …}``; each has
  ``.name``, ``.role`` (config ``Role``), ``.provider``, ``.client`` (``ProtocolClient``) and
  ``.price`` (``Price | None``);
- ``bus``, ``interrupt`` and ``spend`` (the command's ``SpendCap``).

``StageRun`` (the running stage's counters and events):
- ``run.stage``, ``run.role`` (the stage's ``RoleClient``: generator for subtopics and
  questions, parent for answers, None for split), ``run.stats`` (a ``StageStats``);
- ``run.start(total)``: publishes ``StageStarted`` then ``StageModel`` (not for split);
- ``run.admitting()``: False once Ctrl-C came or the spend cap refused a request: start no
  new request then, let the ones in flight finish, and return;
- ``run.request(prompt, system=None, json_list=False, max_tokens=None)``: a
  ``CompletionRequest`` with the role's knobs (max_tokens, temperature, reasoning, effort,
  thinking budget);
- ``run.on_retry(item_id)``: an ``OnRetry`` that publishes the retryable ``ItemFailed``
  «{error}; retrying in {secs:.1f}s»;
- ``await run.complete(request, item_id) -> Paid | None``: every paid request goes through
  it: it reserves the request's worst-case cost in the spend cap (None, nothing sent, when
  the cap refuses it: return and leave the item), sends it with its retries behind the
  stage's gate, and settles the reservation with the reply's usage (estimated from the text
  when the reply has none); ``Paid`` holds the completion, the counted usage and cost, and
  ``estimated``; None too when the gate barred a retry (the item is left for the next run);
- ``run`` is the ``Gate`` of its requests (``run.closed``, ``run.wait_closed()``): closed on
  the first Ctrl-C or a stop, it bars every new attempt and ends retry waits at once
  (``RetryHalted``, which ``run.complete`` and ``run.each`` turn into "left for the next run");
- ``run.add_usage(usage, estimated=False) -> cost | None``: a counted usage, priced with the
  role's price, added to the stats (``run.complete`` calls it); returns its cost;
- ``run.done(item_id, usage, cost, excluded=False, estimated=False)``: the item ended with
  output (``done`` or ``excluded`` += 1) and ``ItemDone`` carrying the item's summed usage
  (already added);
- ``run.skipped(item_id=None, count=1)``: items already stored; with an ``item_id`` it
  publishes ``ItemDone`` without usage, without one it only counts;
- ``run.failed(item_id, error)``: the item failed for good (``failed`` += 1, final
  ``ItemFailed``); an ``LlmError`` with ``stops_stage`` stops the stage too: no new request,
  the ones in flight finish, and the next run asks the item again. One that every request
  would get (HTTP 401–404, ``refuses_every_request``) is not counted as the item's failure,
  as the reference's spec says; an unreachable provider and the same client error for 3
  items in a row (``RepeatedError``) are, as the reference counts those errors;
- ``run.retrying(item_id, message)``: a retryable ``ItemFailed`` (e.g. a parse re-ask);
- ``run.each(items, work)``: ``await work(item)`` for each item with at most
  ``[pipeline] concurrency`` at once, admitting no new item once ``admitting()`` is False;
  an exception in ``work`` cancels the others and propagates.

A body reports an ``LlmError`` with ``stops_stage`` (HTTP 401–404, an unreachable provider,
…) through ``run.failed`` (or raises it) to stop the stage: the stage ends with its summary and
fails with «{stage} stopped: <cause>» (an unreachable provider's message stands alone). Any other
``OverbrainerError`` (a bad data line, a template error) is raised as is, without a summary.

The driver ``run_stage(ctx, stage, body)``:
- runs the body in a cancel scope; the first Ctrl-C (or a stop) closes the gate and gives the
  requests in flight ``[pipeline] drain_secs`` to finish (stored as they complete); a second
  Ctrl-C (the first after a stop) or the end of that grace cancels them;
- publishes ``StageFinished``, makes the summary line for stdout
  («{stage}: {done} done, {skipped} skipped, {failed} failed, {excluded} excluded;
  tokens {in} in, {out} out; cost ${cost:.4f}», or «; cost unknown» when the role's price is
  unknown; a stage that sent nothing at a known price cost $0), and appends the history line
  on every exit path (``ok`` / ``failed`` / ``interrupted``) with the same counts as the
  summary (the reference tallied events when a stage stopped);
- then returns a ``StageOutcome``: the stats, the summary line, the history record it wrote
  (``record``, also handed to ``recorded`` when given: on the paths that raise too), and the
  error the stage fails with: ``StageInterrupted`` (exit 130), ``SpendCapReached`` (exit 1;
  the history line is ``interrupted`` with its ``reason``), ``StageItemsFailed``
  (exit 1), ``StageStopped`` (exit 1), or None. The flow prints the line, then raises the
  error (``outcome.check()``).

Stage bodies live in ``overbrainer/pipeline/``: ``subtopics.py`` exports
``subtopics_stage``, ``questions.py`` exports ``questions_stage`` (both use ``ask.ask_list``),
``answers.py`` exports ``answers_stage`` and ``split_stage.py`` exports ``split_stage``; the flow in
``overbrainer/flows/pipeline.py`` runs them with ``run_stage``.

``StageContext`` lives in ``context.py`` and ``StageRun`` in ``stage_run.py``; every name
above is importable from this module.

A split body calls ``run.finish_split(counts, excluded, line)`` instead of relying on the
generic summary: its own line is the summary and its history line carries the split counts.
A body that ran to its end but must fail after its summary (a split that left no train
example) sets ``run.failure``: the history line is ``failed`` with its message as the reason.

A stop whose cause has ``exit_code`` 2 (``NoReasoning``, ``JudgeNeverScores``: replies that show
a role misconfigured) fails with exit 2, the others with exit 1.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import attrs
import trio

from overbrainer.events.types import Stage, StageFinished, StageStats
from overbrainer.llm import LlmError, ProviderUnreachable
from overbrainer.model.error_groups import meaningful_error
from overbrainer.model.errors import EXIT_INTERRUPTED, OverbrainerError, WorkFailed
from overbrainer.pipeline.context import (
    PIPELINE_TEMPLATES,
    StageContext,
    StageRole,
    load_templates,
    select_topics,
    stage_role_name,
)
from overbrainer.pipeline.stage_run import Body, StageRun, summary_line
from overbrainer.storage import (
    HistoryRecord,
    HistoryStatus,
    InvalidRecord,
    append_history,
    utc_now,
)

__all__ = [
    "INTERRUPTED_LINE",
    "PIPELINE_TEMPLATES",
    "Body",
    "StageContext",
    "StageInterrupted",
    "StageItemsFailed",
    "StageOutcome",
    "StageRole",
    "StageRun",
    "StageStopped",
    "load_templates",
    "run_stage",
    "select_topics",
    "stage_role_name",
    "summary_line",
]

log = logging.getLogger(__name__)

INTERRUPTED_LINE = "interrupted: the stage resumes on its next run"

HISTORY_BOUND = 10.0
"""Seconds a stage waits for its history line (an fsync'd append) before leaving it."""


class StageItemsFailed(WorkFailed):
    """Some items failed after their retries; a rerun retries them (exit 1)."""

    def __init__(self, stage: Stage, failed: int) -> None:
        super().__init__(f"{failed} {stage} item(s) failed; run the command again to retry them")


class StageStopped(WorkFailed):
    """An error fatal for the stage (HTTP 401–404, …) stopped it (exit 1; a setting the
    replies show to be wrong, such as `NoReasoning`, exits with its cause's 2)."""

    def __init__(self, stage: Stage, cause: LlmError) -> None:
        # An unreachable provider names itself and its host: the stage adds nothing to that.
        standalone = isinstance(cause, ProviderUnreachable)
        super().__init__(cause.message if standalone else f"{stage} stopped: {cause.message}")
        self.cause = cause
        self.exit_code = cause.exit_code


class StageInterrupted(OverbrainerError):
    """Ctrl-C stopped the stage; what was stored stays and a rerun resumes (exit 130)."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self) -> None:
        super().__init__(INTERRUPTED_LINE)


def _meaningful(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The error a group of task errors stands for: a stage stop first, then any of ours."""
    return meaningful_error(group, first=_stops_stage)


def _stops_stage(error: OverbrainerError) -> bool:
    return isinstance(error, LlmError) and error.stops_stage


async def _relay_interrupt(run: StageRun) -> None:
    """The first Ctrl-C bars every new request and retry of the stage at once."""
    await run.ctx.interrupt.wait_caught()
    run.halt()


async def _watch_halt(run: StageRun, scope: trio.CancelScope) -> None:
    """Once halted, a grace for the requests in flight; the end of it, or Ctrl-C: cancel.

    Halted by Ctrl-C, the next Ctrl-C cancels; stopped by an error, the first one does. With
    no request in flight there is nothing to save: the stage (a split, a scan of the files)
    is cancelled at once.
    """
    await run.wait_closed()
    interrupt = run.ctx.interrupt
    drain = run.ctx.settings.pipeline.drain_secs
    if interrupt.count < 2 and run.in_flight:
        again = "again " if interrupt.caught else ""
        log.warning(
            "%s: stopping: waiting up to %gs for the %d request(s) in flight "
            "(Ctrl-C %sto stop at once)",
            run.stage,
            drain,
            run.in_flight,
            again,
        )
        with trio.move_on_after(drain):
            await interrupt.wait()
    if run.in_flight:
        log.warning("%s: %d request(s) in flight cancelled", run.stage, run.in_flight)
    scope.cancel()


async def _drive(ctx: StageContext, run: StageRun, body: Body) -> None:
    """Run the body until it returns, or until the halt watcher cancels it."""
    with trio.CancelScope() as scope:
        try:
            async with trio.open_nursery() as nursery:
                if not ctx.interrupt.off:
                    nursery.start_soon(_relay_interrupt, run)
                nursery.start_soon(_watch_halt, run, scope)
                await body(ctx, run)
                nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            errors: BaseExceptionGroup[BaseException] = group
            if run.stop_cause is not None:
                # The stop came first: it is what the stage fails with; a bug beside it is logged.
                errors = BaseExceptionGroup("stage", [run.stop_cause, group])
            found = _meaningful(errors)
            if found is None:
                raise
            raise found from None


@attrs.frozen
class StageOutcome:
    """How a stage that ran to its summary ended: its stats, its line, the error it fails with."""

    stats: StageStats
    line: str
    """The summary line for stdout; the flow prints it before raising `error`."""
    record: HistoryRecord
    """The stage's history line, as written (or as it would have been, had the write failed)."""
    error: OverbrainerError | None = None

    def check(self) -> StageStats:
        """The stats of a stage that succeeded; the stage's error otherwise."""
        if self.error is not None:
            raise self.error
        return self.stats


async def run_stage(
    ctx: StageContext,
    stage: Stage,
    body: Body,
    recorded: Callable[[HistoryRecord], None] | None = None,
) -> StageOutcome:
    """Run one stage body: history line on every exit path; the outcome holds the summary.

    `recorded` gets the history record as soon as it is made, on every path that writes one,
    those that raise included (the `--json` document lists a stage that failed or was cut).

    An error that ends the stage before its summary (a bad data line, a bug) is raised. A bad
    data line is bad input, found by the body's reads before it writes anything: the stage
    did nothing, so it writes nothing either, not even its history line (as `run` does).
    """
    run = StageRun(ctx, stage)
    started_at = utc_now()

    async def record(
        status: HistoryStatus, *, cancelled: bool = False, reason: str | None = None
    ) -> HistoryRecord:
        # The stage's own counts on every exit path, so the line agrees with the summary (the
        # reference tallied events when stopped, counting excluded answers as done).
        role = run.role
        stats = run.stats
        if run.split is not None:
            stats = StageStats(excluded=run.stats.excluded)
        entry = HistoryRecord.from_stats(
            stage,
            started_at,
            utc_now(),
            status,
            None if role is None else role.provider,
            None if role is None else role.role.model,
            stats,
        )
        entry = attrs.evolve(entry, split=run.split, cost_estimated=run.estimated, reason=reason)
        if recorded is not None:
            recorded(entry)
        if not cancelled:
            await trio.to_thread.run_sync(append_history, ctx.project.history, entry)
            return entry
        # Cancelled from outside: shielded, so the stage still records itself, and bounded,
        # so a hung disk cannot hold the command; the line is then left to its thread.
        with trio.move_on_after(HISTORY_BOUND, shield=True) as bound:
            await trio.to_thread.run_sync(
                append_history, ctx.project.history, entry, abandon_on_cancel=True
            )
        if bound.cancelled_caught:
            log.warning(
                "the %s stage's history line was not written within %gs", stage, HISTORY_BOUND
            )
        return entry

    def finish() -> str:
        ctx.bus.publish(StageFinished(stage, run.stats))
        return run.summary_line()

    try:
        await _drive(ctx, run, body)
    except LlmError as error:
        if error.stops_stage:
            line = finish()
            entry = await record(HistoryStatus.FAILED)
            return StageOutcome(run.stats, line, entry, StageStopped(stage, error))
        await record(HistoryStatus.FAILED)
        raise
    except InvalidRecord:
        raise
    except OverbrainerError:
        await record(HistoryStatus.FAILED)
        raise
    except BaseException:
        # Cancelled from outside, or a bug: the line still records what was done.
        await record(HistoryStatus.INTERRUPTED, cancelled=True)
        raise
    line = finish()
    if run.stop_cause is not None:
        entry = await record(HistoryStatus.FAILED)
        return StageOutcome(run.stats, line, entry, StageStopped(stage, run.stop_cause))
    if run.failure is not None:
        entry = await record(HistoryStatus.FAILED, reason=run.failure.message)
        return StageOutcome(run.stats, line, entry, run.failure)
    if ctx.interrupt.caught:
        entry = await record(HistoryStatus.INTERRUPTED)
        return StageOutcome(run.stats, line, entry, StageInterrupted())
    if run.held_back and ctx.spend.reached:
        capped = ctx.spend.error()
        entry = await record(HistoryStatus.INTERRUPTED, reason=capped.reason)
        return StageOutcome(run.stats, line, entry, capped)
    if run.stats.failed:
        entry = await record(HistoryStatus.FAILED)
        return StageOutcome(run.stats, line, entry, StageItemsFailed(stage, run.stats.failed))
    entry = await record(HistoryStatus.OK)
    return StageOutcome(run.stats, line, entry)
