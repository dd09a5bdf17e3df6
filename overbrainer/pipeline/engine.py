"""The stage engine: a stage body runs under `run_stage`, which counts, publishes and records it.

API for stage bodies (subtopics, questions, answers, split)
-----------------------------------------------------------
A body is ``async def body(ctx: StageContext, run: StageRun) -> None``. It reads its inputs,
calls ``run.start(total)`` once it knows how many items it will process, handles each item,
and returns. It never prints: the driver prints the summary line and records the history.

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
- ``bus``, ``frontend``, ``interrupt`` and ``spend`` (the command's ``SpendCap``).

``StageRun`` (the running stage's counters and events):
- ``run.stage``, ``run.role`` (the stage's ``RoleClient``: generator for subtopics and
  questions, parent for answers, None for split), ``run.stats`` (a ``StageStats``);
- ``run.start(total)``: publishes ``StageStarted`` then ``StageModel`` (not for split);
- ``run.admitting()``: False once Ctrl-C came or the spend cap is reached: start no new
  request then, let the ones in flight finish, and return;
- ``run.request(prompt, system=None, json_list=False, max_tokens=None)``: a
  ``CompletionRequest`` with the role's knobs (max_tokens, temperature, reasoning, effort,
  thinking budget);
- ``run.on_retry(item_id)``: an ``OnRetry`` for ``client.complete(request, on_retry)`` that
  publishes the retryable ``ItemFailed`` «{error}; retrying in {secs:.1f}s»;
- ``run.add_usage(usage) -> cost | None``: every attempt's usage, priced with the role's
  price, added to the stats and the spend; returns its cost;
- ``run.done(item_id, usage, cost, excluded=False)``: the item ended with output (``done``
  or ``excluded`` += 1) and ``ItemDone`` carrying the item's summed usage (already added);
- ``run.skipped(item_id=None, count=1)``: items already stored; with an ``item_id`` it
  publishes ``ItemDone`` without usage, without one it only counts;
- ``run.failed(item_id, error)``: the item failed for good (``failed`` += 1, final
  ``ItemFailed``); an ``LlmError`` with ``stops_stage`` is raised again to stop the stage;
- ``run.retrying(item_id, message)``: a retryable ``ItemFailed`` (e.g. a parse re-ask);
- ``run.each(items, work)``: ``await work(item)`` for each item with at most
  ``[pipeline] concurrency`` at once, admitting no new item once ``admitting()`` is False;
  an exception in ``work`` cancels the others and propagates.

A body raises ``LlmError`` with ``stops_stage`` (HTTP 401–404, …) to stop the stage: the
driver prints the summary and fails with «{stage} stopped: <cause>». Any other
``OverbrainerError`` (a bad data line, a template error) fails the stage as is.

The driver ``run_stage(ctx, stage, body)``:
- runs the body in a cancel scope; the first Ctrl-C stops admission and gives the requests in
  flight ``[pipeline] drain_secs`` to finish (stored as they complete); a second Ctrl-C or the
  end of that grace cancels them;
- publishes ``StageFinished``, prints the summary line on stdout
  («{stage}: {done} done, {skipped} skipped, {failed} failed, {excluded} excluded;
  tokens {in} in, {out} out; cost ${cost:.4f}», or «; cost unknown»), and appends the history
  line on every exit path (``ok`` / ``failed`` / ``interrupted``);
- then raises ``StageInterrupted`` (exit 130), ``SpendCapReached`` (exit 1),
  ``StageItemsFailed`` (exit 1) or ``StageStopped`` (exit 1), or returns the stats.

Stage bodies live in ``overbrainer/pipeline/``: ``subtopics.py`` exports
``subtopics_stage``, ``questions.py`` exports ``questions_stage`` (both use ``ask.ask_list``),
``answers.py`` exports ``answers_stage`` and ``split_stage.py`` exports ``split_stage``; the
commands in ``overbrainer/cli/stage_commands.py`` run them with ``run_stage``.

A split body calls ``run.finish_split(counts, excluded, line)`` instead of relying on the
generic summary: it prints its own line and its history line carries the split counts.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Protocol, TypeVar

import attrs
import trio

from overbrainer.config.settings import Role, Settings, Topic
from overbrainer.errors import EXIT_INTERRUPTED, OverbrainerError, UsageError, WorkFailed
from overbrainer.events import (
    EventBus,
    ItemDone,
    ItemFailed,
    Stage,
    StageFinished,
    StageModel,
    StageStarted,
    StageStats,
)
from overbrainer.front import Frontend, Interrupt
from overbrainer.history import HistoryRecord, HistoryStatus, SplitCounts, append_history, utc_now
from overbrainer.llm.client import LlmClient
from overbrainer.llm.errors import LlmError
from overbrainer.llm.types import CompletionRequest
from overbrainer.llm.usage import Price, Usage
from overbrainer.pipeline.spend import SpendCap
from overbrainer.project import Project
from overbrainer.retry import OnRetry, retry_message
from overbrainer.templates import Template, load_template

log = logging.getLogger(__name__)

T = TypeVar("T")

PIPELINE_TEMPLATES = ("subtopics.txt", "questions.txt", "answer_system.txt")
"""The templates the stages render (split loads none)."""

INTERRUPTED_LINE = "interrupted: the stage resumes on its next run"


class StageRole(Protocol):
    """A connected role as the stages use it (`overbrainer.llm.connect.RoleClient`)."""

    @property
    def name(self) -> str:
        """`generator`, `parent` or `embedder`."""

    @property
    def role(self) -> Role:
        """The role's configuration."""

    @property
    def provider(self) -> str:
        """The provider's name."""

    @property
    def client(self) -> LlmClient:
        """The client for the role's model."""

    @property
    def price(self) -> Price | None:
        """The model's price, when known."""


class StageItemsFailed(WorkFailed):
    """Some items failed after their retries; a rerun retries them (exit 1)."""

    def __init__(self, stage: Stage, failed: int) -> None:
        super().__init__(f"{failed} {stage} item(s) failed; run the command again to retry them")


class StageStopped(WorkFailed):
    """An error fatal for the stage (HTTP 401–404, …) stopped it (exit 1)."""

    def __init__(self, stage: Stage, cause: LlmError) -> None:
        super().__init__(f"{stage} stopped: {cause.message}")
        self.cause = cause


class StageInterrupted(OverbrainerError):
    """Ctrl-C stopped the stage; what was stored stays and a rerun resumes (exit 130)."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self) -> None:
        super().__init__(INTERRUPTED_LINE)


def select_topics(settings: Settings, names: Sequence[str]) -> tuple[Topic, ...]:
    """The configured topics named by `--topic` (all when none), in config order."""
    known = {topic.name for topic in settings.topics}
    for name in names:
        if name not in known:
            raise UsageError(f"unknown topic `{name}`")
    if not names:
        return settings.topics
    wanted = set(names)
    return tuple(topic for topic in settings.topics if topic.name in wanted)


def load_templates(project: Project) -> dict[str, Template]:
    """The pipeline's prompt templates: the project's overrides or the built-in defaults."""
    return {name: load_template(project.prompts, name) for name in PIPELINE_TEMPLATES}


@attrs.define
class StageContext:
    """What a stage body gets: project, settings, selection, templates, roles and the bus."""

    project: Project
    settings: Settings
    topics: tuple[Topic, ...]
    bus: EventBus
    frontend: Frontend
    interrupt: Interrupt
    force: bool = False
    topic_filter: tuple[str, ...] | None = None
    templates: Mapping[str, Template] = attrs.field(factory=dict)
    roles: Mapping[str, StageRole] = attrs.field(factory=dict)
    spend: SpendCap = attrs.field(factory=SpendCap)

    @property
    def selected_topic_names(self) -> frozenset[str]:
        """The names of the selected topics."""
        return frozenset(topic.name for topic in self.topics)

    def template(self, name: str) -> Template:
        """A loaded prompt template, e.g. `template("answer_system.txt")`."""
        try:
            return self.templates[name]
        except KeyError:
            raise OverbrainerError(f"template {name} was not loaded") from None


_STAGE_ROLES = {
    Stage.SUBTOPICS: "generator",
    Stage.QUESTIONS: "generator",
    Stage.ANSWERS: "parent",
}


def stage_role_name(stage: Stage) -> str | None:
    """The role a stage asks: the generator, the parent, or none for split."""
    return _STAGE_ROLES.get(stage)


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

    def done(self, item_id: str, usage: Usage, cost: float | None, excluded: bool = False) -> None:
        """The item ended with output; `usage` and `cost` were added by `add_usage` already."""
        if excluded:
            self.stats = attrs.evolve(self.stats, excluded=self.stats.excluded + 1)
        else:
            self.stats = attrs.evolve(self.stats, done=self.stats.done + 1)
        self._publish_done(ItemDone(self.stage, item_id, usage, cost, excluded))

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


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def _meaningful(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The error a group of task errors stands for: a stage stop first, then any of ours."""
    leaves = [e for e in _leaves(group) if not isinstance(e, trio.Cancelled)]
    for leaf in leaves:
        if isinstance(leaf, LlmError) and leaf.stops_stage:
            return leaf
    for leaf in leaves:
        if isinstance(leaf, OverbrainerError):
            return leaf
    return None


async def _watch_interrupt(run: StageRun, scope: trio.CancelScope) -> None:
    """First Ctrl-C: a grace for the requests in flight; a second one, or its end: cancel."""
    interrupt = run.ctx.interrupt
    await interrupt.wait_caught()
    drain = run.ctx.settings.pipeline.drain_secs
    if interrupt.count < 2:
        if run.in_flight:
            log.warning(
                "%s: stopping: waiting up to %gs for the %d request(s) in flight "
                "(Ctrl-C again to stop at once)",
                run.stage,
                drain,
                run.in_flight,
            )
        with trio.move_on_after(drain):
            await interrupt.wait()
    if run.in_flight:
        log.warning("%s: %d request(s) in flight cancelled", run.stage, run.in_flight)
    scope.cancel()


async def _drive(ctx: StageContext, run: StageRun, body: Body) -> None:
    """Run the body until it returns, or until the interruption's watcher cancels it."""
    with trio.CancelScope() as scope:
        try:
            async with trio.open_nursery() as nursery:
                if not ctx.interrupt.off:
                    nursery.start_soon(_watch_interrupt, run, scope)
                await body(ctx, run)
                nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            found = _meaningful(group)
            if found is None:
                raise
            raise found from None


async def run_stage(ctx: StageContext, stage: Stage, body: Body) -> StageStats:
    """Run one stage body: summary line, history line on every exit path, outcome errors."""
    run = StageRun(ctx, stage)
    started_at = utc_now()

    def record(status: HistoryStatus, stats: StageStats) -> None:
        role = run.role
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
        append_history(ctx.project.history, attrs.evolve(entry, split=run.split))

    def finish() -> None:
        ctx.bus.publish(StageFinished(stage, run.stats))
        ctx.frontend.line(run.summary_line())

    try:
        await _drive(ctx, run, body)
    except LlmError as error:
        if error.stops_stage:
            finish()
            record(HistoryStatus.FAILED, run.tally)
            raise StageStopped(stage, error) from None
        record(HistoryStatus.FAILED, run.tally)
        raise
    except OverbrainerError:
        record(HistoryStatus.FAILED, run.tally)
        raise
    except BaseException:
        # Cancelled from outside, or a bug: the line still records what was done.
        record(HistoryStatus.INTERRUPTED, run.tally)
        raise
    finish()
    if ctx.interrupt.caught:
        record(HistoryStatus.INTERRUPTED, run.tally)
        raise StageInterrupted()
    if run.held_back and ctx.spend.reached:
        record(HistoryStatus.INTERRUPTED, run.tally)
        raise ctx.spend.error()
    if run.stats.failed:
        record(HistoryStatus.FAILED, run.stats)
        raise StageItemsFailed(stage, run.stats.failed)
    record(HistoryStatus.OK, run.stats)
    return run.stats
