"""The flow of the stage commands and `run`: lock, config, topics, templates, clients, stages."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import attrs
import trio

from overbrainer.config.preflight import check_roles
from overbrainer.config.settings import Settings, Topic
from overbrainer.config.validate import batch_discount, batch_problem
from overbrainer.events.bus import EventBus
from overbrainer.events.frontend import Frontend
from overbrainer.events.interrupt import Interrupt
from overbrainer.events.types import ConcurrencyChanged, Stage
from overbrainer.flows.config_state import ConfigState
from overbrainer.flows.setup import Command, CommandOptions, open_command
from overbrainer.llm import EMBEDDER, PriceBook, RoleClient, connect_roles
from overbrainer.model.errors import UsageError
from overbrainer.model.usage import Price
from overbrainer.pipeline.answers import answers_stage
from overbrainer.pipeline.benchmark_files import check_benchmarks
from overbrainer.pipeline.context import check_templates
from overbrainer.pipeline.engine import (
    Body,
    StageContext,
    StageInterrupted,
    load_templates,
    run_stage,
    select_topics,
    stage_role_name,
)
from overbrainer.pipeline.spend import SpendCap, UnknownPrices
from overbrainer.project.directory import Project
from overbrainer.project.templates import Template
from overbrainer.storage import HistoryRecord, Question, Subtopic, read_current

if TYPE_CHECKING:
    from overbrainer.pipeline.estimate import StageEstimate

log = logging.getLogger(__name__)

NO_JUDGE = 'no [quality] judge in overbrainer.toml: add judge = { provider = "...", model = "..." }'


def _body(stage: Stage, batch: bool = False, cancel: bool = False) -> Body:
    """The body of `stage` (imported on use: each stage lives in its own module); answers
    through the batch API with `batch` (cancelling the recorded batches with `cancel`)."""
    if stage is Stage.SUBTOPICS:
        from overbrainer.pipeline.subtopics import subtopics_stage

        return subtopics_stage
    if stage is Stage.QUESTIONS:
        from overbrainer.pipeline.questions import questions_stage

        return questions_stage
    if stage is Stage.SPLIT:
        from overbrainer.pipeline.split_stage import split_stage

        return split_stage
    if stage is Stage.QUALITY:
        from overbrainer.pipeline.quality import quality_stage

        return quality_stage
    if batch:
        from overbrainer.pipeline.batch_answers import batch_answers_stage, cancel_batches_stage

        return cancel_batches_stage if cancel else batch_answers_stage
    return answers_stage


def _price_of(roles: dict[str, RoleClient], stage: Stage) -> Price | None:
    name = stage_role_name(stage)
    role = None if name is None else roles.get(name)
    return None if role is None else role.price


def _role_names(stages: Sequence[Stage]) -> list[str]:
    names: list[str] = []
    for stage in stages:
        name = stage_role_name(stage)
        if name is not None and name not in names:
            names.append(name)
    if Stage.QUESTIONS in stages:
        names.append(EMBEDDER)
    return names


def _with_quality(stages: Sequence[Stage], settings: Settings, whole_run: bool) -> list[Stage]:
    """`run` scores the answers between answers and split when `[quality] judge` is set, and
    skips that stage silently otherwise; `quality` alone without a judge is bad input."""
    planned = list(stages)
    judged = settings.quality.judge is not None
    if whole_run and judged and Stage.SPLIT in planned and Stage.QUALITY not in planned:
        planned.insert(planned.index(Stage.SPLIT), Stage.QUALITY)
    if Stage.QUALITY in planned and not judged:
        raise UsageError(NO_JUDGE)
    return planned


def _paid(stage: Stage) -> bool:
    """Whether `stage` sends paid requests (`run` says its estimate before it)."""
    from overbrainer.pipeline.estimate import PAID_STAGES

    return stage in PAID_STAGES


def _check_prices(roles: dict[str, RoleClient], spend: SpendCap) -> None:
    if spend.limit is None:
        return
    if any(client.price is None for name, client in roles.items() if name != EMBEDDER):
        raise UnknownPrices()


def _topics_without_subtopics(project: Project, names: frozenset[str]) -> bool:
    from overbrainer.pipeline.imported import imported_ids

    # An imported subtopic is not the generator's: a topic with only those has none yet.
    imported = imported_ids(project)
    stored = read_current(
        project.data_file("subtopics"),
        project.force_state("subtopics"),
        Subtopic.from_json,
        lambda subtopic: subtopic.id,
    )
    have = {subtopic.topic for subtopic in stored if subtopic.id not in imported}
    return any(name not in have for name in names)


def _check_questions(project: Project) -> None:
    """Read `questions.jsonl` whole: a bad line is bad input (`InvalidRecord`), which must stop
    `questions` before the subtopics stage it runs first asks or writes anything."""
    read_current(
        project.data_file("questions"),
        project.force_state("questions"),
        Question.from_json,
        lambda question: question.id,
    )


@attrs.frozen
class PipelineRequest:
    """What a stage command or `run` asks of `pipeline_flow`: its stages, topics and flags."""

    stages: tuple[Stage, ...]
    topic_names: tuple[str, ...] = ()
    """The topics named on the command line; none means every topic."""
    force: bool = False
    max_cost: float | None = None
    """`--max-cost`, over `[pipeline] max_cost_usd`."""
    whole_run: bool = False
    """`overbrainer run`: stages in order, the config reloaded between them, then training."""
    train: bool = True
    """False (`run --no-train`) stops `run` after split even with `[training]`."""
    batch: bool = False
    """`answers --batch`: the answers go through the parent's batch API."""
    cancel: bool = False
    """`answers --batch --cancel`: the recorded batches are cancelled."""


@attrs.define
class _Pipeline:
    """One command's stages, sharing its bus, interrupt, spend cap and price listings."""

    project: Project
    config: ConfigState
    front: Frontend
    bus: EventBus
    interrupt: Interrupt
    request: PipelineRequest
    spend: SpendCap
    prices: PriceBook = attrs.Factory(PriceBook)
    ran: list[HistoryRecord] = attrs.Factory(list)
    """The history record of each stage this command ran, in order."""

    def _recorded(self, record: HistoryRecord) -> None:
        """A stage's history record: the front end's `"stages"` result grows by it."""
        self.ran.append(record)
        self.front.result("stages", tuple(self.ran))

    def _batching(self, stage: Stage) -> bool:
        """Whether `stage` runs through the batch API (`--batch`, `[roles.parent] batch`)."""
        if stage is not Stage.ANSWERS:
            return False
        if not (self.request.batch or self.config.settings.roles.parent.batch):
            return False
        problem = batch_problem(self.config.settings)
        if problem is not None:
            raise UsageError(f"--batch: {problem}")
        return True

    def _concurrency_changed(self, model: str, old: int, new: int, reason: str) -> None:
        self.bus.publish(ConcurrencyChanged(model, old, new, reason))

    async def _connect(
        self, connection: contextlib.AsyncExitStack, names: list[str]
    ) -> dict[str, RoleClient]:
        if not names:
            return {}
        await trio.to_thread.run_sync(check_roles, self.config.settings, names, self.config.env)
        # Ctrl-C here stops waiting for keys and price listings at once (no stage started yet).
        roles = await self.interrupt.race(
            lambda: connection.enter_async_context(
                connect_roles(
                    self.config.settings,
                    names,
                    self.config.env,
                    self.prices,
                    self._concurrency_changed,
                    self.bus.publish,
                )
            )
        )
        if roles is None:
            raise StageInterrupted()
        _check_prices(roles, self.spend)
        return roles

    async def _estimates(
        self,
        stages: Sequence[Stage],
        templates: Mapping[str, Template],
        topics: tuple[Topic, ...],
    ) -> list[StageEstimate]:
        from overbrainer.pipeline.estimate import estimate_stages

        return await trio.to_thread.run_sync(
            estimate_stages, self.project, self.config.settings, stages, templates, topics
        )

    async def _estimate_line(
        self,
        stage: Stage,
        templates: Mapping[str, Template],
        topics: tuple[Topic, ...],
        roles: dict[str, RoleClient],
        known: StageEstimate | None = None,
    ) -> None:
        """`run`'s line before a paid stage: what it still has to do and may cost (`known`:
        its estimate made before any stage ran, when that is still what is on disk)."""
        from overbrainer.pipeline.estimate import estimate_line

        if known is None:
            [known] = await self._estimates([stage], templates, topics)
        estimate = known
        discount = batch_discount(self.config.settings)
        log.info("%s", estimate_line(estimate, _price_of(roles, stage), discount))

    async def _warn_below_estimate(
        self,
        stages: Sequence[Stage],
        templates: Mapping[str, Template],
        topics: tuple[Topic, ...],
        roles: dict[str, RoleClient],
    ) -> dict[Stage, StageEstimate]:
        """A spend cap below the low end of the estimate (answers at the batch price when they
        go through the batch API) is said before the first request; the estimates made."""
        limit = self.spend.limit
        if limit is None:
            return {}
        # Imported on use (with the quality stage's readers): most commands set no spend cap.
        from overbrainer.pipeline.estimate import PAID_STAGES, money

        paid = [stage for stage in stages if stage in PAID_STAGES]
        if not paid:
            return {}
        estimates = await self._estimates(paid, templates, topics)
        low = 0.0
        for estimate in estimates:
            batching = self._batching(estimate.stage)
            discount = (batch_discount(self.config.settings) or 1.0) if batching else 1.0
            cost = estimate.cost(_price_of(roles, estimate.stage), discount)
            if cost is not None:
                low += cost[0]
        if low > float(limit):
            log.warning(
                "the spend cap %s is below the estimate's low end %s: the stages will "
                "stop before they are done (see `overbrainer estimate`)",
                money(float(limit)),
                money(low),
            )
        return {estimate.stage: estimate for estimate in estimates}

    async def run(self, stages: list[Stage], topics: tuple[Topic, ...]) -> None:
        """Templates, clients, then each stage; `run` reloads a changed config between them."""
        asks = any(stage is not Stage.SPLIT for stage in stages)
        templates = load_templates(self.project) if asks else {}
        check_templates(templates, topics)
        names = _role_names(stages)
        async with contextlib.AsyncExitStack() as connection:
            roles = await self._connect(connection, names)
            upfront = await self._warn_below_estimate(stages, templates, topics, roles)
            for index, stage in enumerate(stages):
                if index > 0 and self.request.whole_run:
                    if self.interrupt.caught:
                        raise StageInterrupted()
                    if self.config.reload_if_changed():
                        await connection.aclose()
                        topics = select_topics(self.config.settings, ())
                        asking = stage is not Stage.SPLIT
                        roles = await self._connect(connection, names if asking else [])
                    if stage is not Stage.SPLIT:
                        templates = load_templates(self.project)
                        check_templates(templates, topics)
                ctx = StageContext(
                    project=self.project,
                    settings=self.config.settings,
                    topics=topics,
                    bus=self.bus,
                    interrupt=self.interrupt,
                    force=self.request.force and not (stage is Stage.SUBTOPICS and len(stages) > 1),
                    topic_filter=self.request.topic_names or None,
                    templates=templates,
                    roles=roles,
                    spend=self.spend,
                )
                if self.request.whole_run and _paid(stage):
                    # Before the first stage nothing has changed on disk since `upfront`.
                    known = upfront.get(stage) if index == 0 else None
                    await self._estimate_line(stage, templates, topics, roles, known)
                body = _body(stage, self._batching(stage), self.request.cancel)
                outcome = await run_stage(ctx, stage, body, self._recorded)
                self.front.line(outcome.line)
                outcome.check()


async def _check_training(command: Command) -> None:
    """Refuse a `run` whose training cannot start, before any stage spends."""
    # The training, export and push layers are imported only by a `run` that trains: a stage
    # command never needs them, and they are a third of its start-up.
    from overbrainer.training import refuse_if_training_cannot_start, warn_if_a_run_still_trains

    settings = command.config.settings
    await refuse_if_training_cannot_start(settings, command.project, command.interrupt)
    await warn_if_a_run_still_trains(settings, command.project)


async def _train_and_push(command: Command, front: Frontend) -> None:
    """`run`'s training after split, then its push when `[hub]` asks for one."""
    from overbrainer.flows.push import push_after_training
    from overbrainer.flows.train import train_after_split, training_session

    record = await train_after_split(training_session(command), front)
    if record is not None:
        await push_after_training(command, front, record)


async def pipeline_flow(options: CommandOptions, front: Frontend, request: PipelineRequest) -> None:
    """Run the request's stages in order under the project's lock (`run`: then training)."""
    whole_run = request.whole_run
    front.result("stages", ())  # `--json` lists none when the command stops before a stage
    if whole_run:
        front.result("train", None)  # null unless `run` trained (and pushed)
        front.result("push", None)
    async with open_command(options, front) as command:
        project, config, interrupt = command.project, command.config, command.interrupt
        topics = select_topics(config.settings, request.topic_names)
        if whole_run and request.train:
            await _check_training(command)
        planned = _with_quality(request.stages, config.settings, whole_run)
        if planned == [Stage.QUESTIONS] and _topics_without_subtopics(
            project, frozenset(t.name for t in topics)
        ):
            _check_questions(project)
            planned = [Stage.SUBTOPICS, Stage.QUESTIONS]
        if Stage.SPLIT in planned:
            # Bad input is refused before any stage starts, so no stage records a history line.
            files = config.settings.quality.decontaminate
            await trio.to_thread.run_sync(check_benchmarks, project.root, files)
        max_cost = request.max_cost
        cap = config.settings.pipeline.max_cost_usd if max_cost is None else max_cost
        pipeline = _Pipeline(project, config, front, command.bus, interrupt, request, SpendCap(cap))
        await pipeline.run(planned, topics)
        if whole_run:
            if interrupt.caught:
                raise StageInterrupted()
            if not request.train:
                log.info("--no-train: run stops after split")
                return
            config.reload_if_changed()
            await _train_and_push(command, front)
