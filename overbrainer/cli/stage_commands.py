"""The pipeline commands: `subtopics`, `questions`, `answers`, `quality`, `split` and `run`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from overbrainer.cli.completion import complete_topics
from overbrainer.cli.context import cli_frontend
from overbrainer.cli.group import cli
from overbrainer.cli.options import command_options, json_option, max_cost_option
from overbrainer.cli.running import run_flow

if TYPE_CHECKING:
    from overbrainer.api import Project, Stage, StagesResult
    from overbrainer.events.frontend import Frontend

# The stages and the API are imported on use: defining the commands (for `--help` and
# completion) needs only click.

F = TypeVar("F", bound=Callable[..., None])


def _topic_option(command: F) -> F:
    return click.option(
        "--topic",
        "topics",
        multiple=True,
        metavar="NAME",
        shell_complete=complete_topics,
        help="Only this topic (repeatable); all configured topics when unset.",
    )(command)


def _force_option(command: F) -> F:
    return click.option(
        "--force",
        is_flag=True,
        help="Throw away this stage's output for the selected topics and make it again.",
    )(command)


def _pipeline_command(
    work: Callable[[Project, Frontend, Path | None], Awaitable[StagesResult]],
) -> None:
    """Run `work` through the public API (`overbrainer.api`) with the terminal's front end,
    and exit as its result says (its error's line and exit code)."""
    from overbrainer.api import open_project

    options = command_options()

    async def flow() -> None:
        project = open_project(options.project_dir)
        result = await work(project, cli_frontend(), options.events)
        result.check()

    run_flow(flow)


def _stages_command(
    stage: Stage,
    topics: tuple[str, ...] = (),
    force: bool = False,
    max_cost: float | None = None,
    *,
    batch: bool = False,
    cancel: bool = False,
) -> None:
    """One stage command: `Project.run_stages` with the command line's flags."""
    _pipeline_command(
        lambda project, front, events: project.run_stages(
            (stage,),
            topics=topics,
            force=force,
            max_cost=max_cost,
            batch=batch,
            cancel_batches=cancel,
            events_file=events,
            front=front,
        )
    )


@cli.command()
@_topic_option
@_force_option
@max_cost_option
@json_option
def subtopics(topics: tuple[str, ...], force: bool, max_cost: float | None) -> None:
    """Ask the generator for each topic's missing subtopics."""
    from overbrainer.events.types import Stage

    _stages_command(Stage.SUBTOPICS, topics, force, max_cost)


@cli.command()
@_topic_option
@_force_option
@max_cost_option
@json_option
def questions(topics: tuple[str, ...], force: bool, max_cost: float | None) -> None:
    """Ask the generator for each subtopic's missing questions, dropping near-duplicates."""
    from overbrainer.events.types import Stage

    _stages_command(Stage.QUESTIONS, topics, force, max_cost)


@cli.command()
@_topic_option
@_force_option
@max_cost_option
@click.option(
    "--batch",
    is_flag=True,
    help="Answer through the provider's batch API (cheaper, slower); a rerun collects the "
    "batches already submitted instead of submitting them again.",
)
@click.option(
    "--cancel",
    is_flag=True,
    help="With --batch: cancel the submitted batches, keeping the answers they finished.",
)
@json_option
def answers(
    topics: tuple[str, ...], force: bool, max_cost: float | None, batch: bool, cancel: bool
) -> None:
    """Ask the parent to answer every question not answered yet."""
    from overbrainer.events.types import Stage

    if cancel and not batch:
        raise click.UsageError("--cancel needs --batch")
    if batch and force:
        raise click.UsageError("--force cannot be combined with --batch")
    _stages_command(Stage.ANSWERS, topics, force, max_cost, batch=batch, cancel=cancel)


@cli.command()
@_topic_option
@click.option(
    "--force",
    is_flag=True,
    help="Score every selected answer again, even those this judge and prompt scored.",
)
@max_cost_option
@json_option
def quality(topics: tuple[str, ...], force: bool, max_cost: float | None) -> None:
    """Ask the [quality] judge to score every answer not scored yet (split drops low ones)."""
    from overbrainer.events.types import Stage

    _stages_command(Stage.QUALITY, topics, force, max_cost)


SPLIT_HELP = """Rewrite data/train.jsonl and data/eval.jsonl from the usable answers.

Answers left by a topic no longer in overbrainer.toml, or by a question no longer in
data/questions.jsonl (after `questions --force`), are orphaned answers: they stay in
data/answers.jsonl, are left out of train and eval, and are counted as orphaned."""


@cli.command(help=SPLIT_HELP)
@click.option(
    "--topic",
    metavar="NAME",
    default=None,
    shell_complete=complete_topics,
    help="Only count this topic in the line and history; every topic is still split.",
)
@json_option
def split(topic: str | None) -> None:
    """Rewrite data/train.jsonl and data/eval.jsonl from the usable answers."""
    from overbrainer.events.types import Stage

    _stages_command(Stage.SPLIT, () if topic is None else (topic,))


@cli.command(name="run")
@max_cost_option
@click.option(
    "--no-train",
    is_flag=True,
    help="Stop after split even when overbrainer.toml has a [training] section.",
)
@json_option
def run_command(max_cost: float | None, no_train: bool) -> None:
    """Run every stage (subtopics, questions, answers, quality, split), then train with [training].

    quality runs only when overbrainer.toml has a [quality] judge.
    """
    _pipeline_command(
        lambda project, front, events: project.run(
            train=not no_train, max_cost=max_cost, events_file=events, front=front
        )
    )
