"""The flow of the stage commands and `run`: lock, config, topics, templates, clients, stages."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Sequence

import attrs

from overbrainer.cli.context import project_dir
from overbrainer.cli.options import cli_frontend, events_file
from overbrainer.config import load_settings
from overbrainer.config.settings import Settings, Topic
from overbrainer.events.bus import EventBus, Observers
from overbrainer.events.interrupt import Interrupt
from overbrainer.events.types import Stage
from overbrainer.llm.connect import EMBEDDER, RoleClient, connect_roles
from overbrainer.llm.pricing import PriceBook
from overbrainer.metrics.endpoint import open_metrics
from overbrainer.model.errors import OverbrainerError, UsageError
from overbrainer.pipeline.answers import answers_stage
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
from overbrainer.project.directory import Project, open_project, project_lock
from overbrainer.storage.jsonl import Stamp as FileStamp
from overbrainer.storage.jsonl import file_stamp, read_records
from overbrainer.storage.records import Subtopic
from overbrainer.training.lifecycle import train_after_split, warn_if_training_cannot_start
from overbrainer.ui.front import CliFrontend

log = logging.getLogger(__name__)

Stamp = tuple[FileStamp | None, FileStamp | None]


def _body(stage: Stage) -> Body:
    """The body of `stage` (imported on use: each stage lives in its own module)."""
    if stage is Stage.SUBTOPICS:
        from overbrainer.pipeline.subtopics import subtopics_stage

        return subtopics_stage
    if stage is Stage.QUESTIONS:
        from overbrainer.pipeline.questions import questions_stage

        return questions_stage
    if stage is Stage.SPLIT:
        from overbrainer.pipeline.split_stage import split_stage

        return split_stage
    return answers_stage


class ConfigState:
    """The settings a command runs with, and what `run` needs to reload them between stages."""

    def __init__(self, project: Project) -> None:
        self.project = project
        # The shell's environment, before `.env` added to it: a reload starts from it again.
        self.shell_env = dict(os.environ)
        self.stamp = self._stamp()
        self.env = os.environ
        self.settings: Settings = load_settings(project.root, self.env)

    def _stamp(self) -> Stamp:
        return file_stamp(self.project.config), file_stamp(self.project.env_file)

    def reload_if_changed(self) -> bool:
        """Re-read `overbrainer.toml` and `.env` when either changed; True when it did."""
        stamp = self._stamp()
        if stamp == self.stamp:
            return False
        env = dict(self.shell_env)
        try:
            settings = load_settings(self.project.root, env)
        except OverbrainerError as error:
            raise UsageError(
                f"the configuration changed and cannot be used; the run stops: {error.message}"
            ) from None
        for key in set(os.environ) - set(env):
            del os.environ[key]
        os.environ.update(env)
        self.stamp, self.settings = stamp, settings
        log.info("config reloaded")
        return True


def _role_names(stages: Sequence[Stage]) -> list[str]:
    names: list[str] = []
    for stage in stages:
        name = stage_role_name(stage)
        if name is not None and name not in names:
            names.append(name)
    if Stage.QUESTIONS in stages:
        names.append(EMBEDDER)
    return names


def _check_prices(roles: dict[str, RoleClient], spend: SpendCap) -> None:
    if spend.limit is None:
        return
    if any(client.price is None for name, client in roles.items() if name != EMBEDDER):
        raise UnknownPrices()


def _topics_without_subtopics(project: Project, names: frozenset[str]) -> bool:
    stored = read_records(project.data_file("subtopics"), Subtopic.from_json)
    have = {subtopic.topic for subtopic in stored}
    return any(name not in have for name in names)


@attrs.define
class _Pipeline:
    """One command's stages, sharing its bus, interrupt, spend cap and price listings."""

    project: Project
    config: ConfigState
    front: CliFrontend
    bus: EventBus
    interrupt: Interrupt
    topic_names: tuple[str, ...]
    force: bool
    whole_run: bool
    spend: SpendCap
    prices: PriceBook = attrs.Factory(PriceBook)

    async def _connect(
        self, connection: contextlib.AsyncExitStack, names: list[str]
    ) -> dict[str, RoleClient]:
        if not names:
            return {}
        # Ctrl-C here stops waiting for keys and price listings at once (no stage started yet).
        roles = await self.interrupt.race(
            lambda: connection.enter_async_context(
                connect_roles(self.config.settings, names, self.config.env, self.prices)
            )
        )
        if roles is None:
            raise StageInterrupted()
        _check_prices(roles, self.spend)
        return roles

    async def run(self, stages: list[Stage], topics: tuple[Topic, ...]) -> None:
        """Templates, clients, then each stage; `run` reloads a changed config between them."""
        asks = any(stage is not Stage.SPLIT for stage in stages)
        templates = load_templates(self.project) if asks else {}
        check_templates(templates, topics)
        names = _role_names(stages)
        async with contextlib.AsyncExitStack() as connection:
            roles = await self._connect(connection, names)
            for index, stage in enumerate(stages):
                if index > 0 and self.whole_run:
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
                    force=self.force and not (stage is Stage.SUBTOPICS and len(stages) > 1),
                    topic_filter=self.topic_names or None,
                    templates=templates,
                    roles=roles,
                    spend=self.spend,
                )
                outcome = await run_stage(ctx, stage, _body(stage))
                self.front.line(outcome.line)
                outcome.check()


async def pipeline_flow(
    stages: Sequence[Stage],
    topic_names: Sequence[str] = (),
    *,
    force: bool = False,
    max_cost: float | None = None,
    whole_run: bool = False,
    train: bool = True,
) -> None:
    """Run `stages` in order under the project's lock; `whole_run` is `overbrainer run`.

    `train` False (`run --no-train`) stops `run` after split even with `[training]`.
    """
    project = open_project(project_dir())
    with cli_frontend(events_file()) as cli, project_lock(project):
        async with cli.interrupt() as interrupt:
            config = ConfigState(project)
            topics = select_topics(config.settings, topic_names)
            if whole_run and train:
                warn_if_training_cannot_start(config.settings)
            planned = list(stages)
            if planned == [Stage.QUESTIONS] and _topics_without_subtopics(
                project, frozenset(t.name for t in topics)
            ):
                planned = [Stage.SUBTOPICS, Stage.QUESTIONS]
            cap = config.settings.pipeline.max_cost_usd if max_cost is None else max_cost
            async with open_metrics(config.settings, project) as serving:
                front = CliFrontend(Observers(cli.observer, serving.observer))
                async with front.open_bus() as bus:
                    pipeline = _Pipeline(
                        project,
                        config,
                        front,
                        bus,
                        interrupt,
                        tuple(topic_names),
                        force,
                        whole_run,
                        SpendCap(cap),
                    )
                    await pipeline.run(planned, topics)
                    if whole_run:
                        if interrupt.caught:
                            raise StageInterrupted()
                        if not train:
                            log.info("--no-train: run stops after split")
                            return
                        config.reload_if_changed()
                        await train_after_split(
                            config.settings, project, bus, interrupt, front.line, front.run_created
                        )
