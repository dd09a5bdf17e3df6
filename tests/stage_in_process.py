"""The answers stage run in the test's own Trio run (on its clock, e.g. `autojump_clock`),
against a stand-in at `url`, with the project's settings as the command would load them."""

from __future__ import annotations

from pathlib import Path

from overbrainer.config.load import load_settings
from overbrainer.events.bus import open_event_bus
from overbrainer.events.interrupt import Interrupt
from overbrainer.events.types import Stage
from overbrainer.llm.adaptive import OnWait
from overbrainer.llm.connect import ConcurrencyObserver, connect_roles
from overbrainer.pipeline.answers import answers_stage
from overbrainer.pipeline.context import load_templates, select_topics
from overbrainer.pipeline.engine import StageContext, StageOutcome, run_stage
from overbrainer.pipeline.spend import SpendCap
from overbrainer.project.directory import Project
from tests.pipeline_support import command_env


async def answer_in_process(
    root: Path,
    url: str,
    *,
    on_concurrency: ConcurrencyObserver | None = None,
    on_wait: OnWait | None = None,
) -> StageOutcome:
    """`overbrainer answers` on the project at `root`, without its process and front end: the
    adaptive limiter's changes go to `on_concurrency`, its announced pauses to `on_wait`."""
    env = command_env(url)
    settings = load_settings(root, env)
    project = Project(root)
    async with (
        open_event_bus() as bus,
        connect_roles(
            settings, ["parent"], env, on_concurrency=on_concurrency, on_wait=on_wait
        ) as roles,
    ):
        ctx = StageContext(
            project=project,
            settings=settings,
            topics=select_topics(settings, ()),
            bus=bus,
            interrupt=Interrupt(),
            spend=SpendCap(),
            templates=load_templates(project),
            roles=roles,
        )
        return await run_stage(ctx, Stage.ANSWERS, answers_stage)
