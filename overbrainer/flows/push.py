"""The order of work of `overbrainer push`, and the push after a training run (§C.4)."""

from __future__ import annotations

import logging

import trio

from overbrainer.events.frontend import Frontend, ResultSink
from overbrainer.flows.setup import Command, CommandOptions, open_command
from overbrainer.hub.errors import PushCancelled
from overbrainer.model.errors import OverbrainerError
from overbrainer.training import RunRecord, Runs, RunState

log = logging.getLogger(__name__)


async def push_run(
    command: Command,
    sink: ResultSink,
    run_id: str,
    *,
    repo: str | None = None,
    public: bool = False,
    overwrite_card: bool = False,
    dry_run: bool = False,
) -> None:
    """Plan and push one run (or only show it, `dry_run`), handing the lines to the sink."""
    # Imported on use: the card's template engine and the Hub client cost every other
    # command's start-up (train, run and attach import this module) for nothing.
    from overbrainer.hub import push as hub_push
    from overbrainer.hub.plan import plan_push

    settings = command.settings
    runs = Runs(command.project.runs)
    plan = await trio.to_thread.run_sync(
        lambda: plan_push(runs, settings, run_id, repo=repo, public=public)
    )
    if dry_run:
        token = None if settings.hf_token is None else await hub_push.hub_token(settings)
        result = await hub_push.dry_run(plan, settings, token)
    else:
        result = await hub_push.push(
            plan, settings, command.bus, command.interrupt, overwrite_card=overwrite_card
        )
    for line in result.lines:
        sink.line(line)
    sink.result("push", result.summary)


async def push_flow(
    options: CommandOptions,
    front: Frontend,
    run_id: str,
    *,
    repo: str | None = None,
    public: bool = False,
    overwrite_card: bool = False,
    dry_run: bool = False,
) -> None:
    """`overbrainer push RUN_ID`: the run's model, GGUF and card to the Hub."""
    front.result("push", None)  # `--json`: null until pushed (or planned, with --dry-run)
    async with open_command(options, front) as command:
        await push_run(
            command,
            front,
            run_id,
            repo=repo,
            public=public,
            overwrite_card=overwrite_card,
            dry_run=dry_run,
        )


async def push_dataset_flow(
    options: CommandOptions,
    front: Frontend,
    *,
    repo: str | None = None,
    public: bool = False,
    overwrite_card: bool = False,
    dry_run: bool = False,
) -> None:
    """`overbrainer push --dataset`: the project's train and eval files and a card to the Hub."""
    from overbrainer.hub import dataset
    from overbrainer.hub import push as hub_push

    front.result("push", None)
    async with open_command(options, front) as command:
        settings, project = command.settings, command.project
        plan = await trio.to_thread.run_sync(
            lambda: dataset.plan_dataset(
                settings, project.data, project.state, project.history, repo=repo, public=public
            )
        )
        if dry_run:
            token = None if settings.hf_token is None else await hub_push.hub_token(settings)
            result = await dataset.dry_run_dataset(plan, settings, token)
        else:
            result = await dataset.push_dataset(
                plan, settings, command.bus, command.interrupt, overwrite_card=overwrite_card
            )
        for line in result.lines:
            front.line(line)
        front.result("push", result.summary)


async def push_after_training(command: Command, sink: ResultSink, record: RunRecord) -> None:
    """`[hub] after_training`: push a run that succeeded and came back; failures only warn.

    Ctrl-C during it is the command's interruption (exit 130), with a line saying how to push.
    """
    if not command.settings.hub.after_training or record.state is not RunState.SUCCEEDED:
        return
    from overbrainer.hub.plan import PUSH_DIR, PUSH_FILE

    runs = Runs(command.project.runs)
    if await trio.to_thread.run_sync((runs.dir_of(record.id) / PUSH_DIR / PUSH_FILE).exists):
        return
    try:
        await push_run(command, sink, record.id)
    except PushCancelled:
        raise PushCancelled(
            "push cancelled before its commit finished; run it again with: "
            f"overbrainer push {record.id}"
        ) from None
    except OverbrainerError as error:
        log.warning(
            "push failed: %s; run it again with: overbrainer push %s", error.message, record.id
        )
