"""`overbrainer train [--target NAME] [--resume-from RUN_ID]` and `train attach|stop|cancel`."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

import click

from overbrainer.cli.context import project_dir
from overbrainer.cli.main import cli
from overbrainer.cli.options import cli_frontend, events_file
from overbrainer.cli.running import run_flow
from overbrainer.config import load_settings
from overbrainer.events.bus import Observers
from overbrainer.metrics.endpoint import open_metrics
from overbrainer.model.error_groups import meaningful_error
from overbrainer.model.errors import OverbrainerError
from overbrainer.project.directory import ProjectLocked, open_project, project_lock
from overbrainer.training import run_commands
from overbrainer.training.lifecycle import Session
from overbrainer.training.lifecycle import train as train_run
from overbrainer.training.run_store import Runs
from overbrainer.ui.front import CliFrontend


async def in_session(body: Callable[[Session], Awaitable[None]], *, lock: bool = True) -> None:
    """Run `body` with the project's settings, lock, bus (rendered to stderr) and Ctrl-C.

    A command that writes (`lock`) also serves `[metrics] listen` while it runs.
    """
    project = open_project(project_dir())
    settings = load_settings(project.root)
    with contextlib.ExitStack() as stack:
        if lock:
            stack.enter_context(project_lock(project))
        cli_front = stack.enter_context(cli_frontend(events_file()))
        failure: OverbrainerError | None = None
        async with contextlib.AsyncExitStack() as serving:
            observer = cli_front.observer
            if lock:
                metrics = await serving.enter_async_context(open_metrics(settings, project))
                observer = Observers(observer, metrics.observer)
            front = CliFrontend(observer)
            async with front.open_bus() as bus, front.interrupt() as interrupt:
                session = Session(
                    settings, project, bus, interrupt, front.line, created=front.run_created
                )
                try:
                    await body(session)
                except OverbrainerError as error:
                    failure = error  # raised once the bus has printed every queued line
                except BaseExceptionGroup as group:
                    failure = single_error(group)
                    if failure is None:
                        raise
        if failure is not None:
            raise failure


def single_error(group: BaseExceptionGroup[BaseException]) -> OverbrainerError | None:
    """The OverbrainerError a group stands for (bugs beside it logged), else None: a bug."""
    found = meaningful_error(group)
    if isinstance(found, KeyboardInterrupt):
        raise found from None  # as its own: what it hid is logged once, here
    return found


@cli.group(invoke_without_command=True)
@click.option("--target", "target_name", metavar="NAME", help="Train on this [targets] entry.")
@click.option("--resume-from", metavar="RUN_ID", help="Resume from the snapshot of a stopped run.")
@click.option("--keep-pod", is_flag=True, help="Runpod targets only: keep the pod after the run.")
@click.pass_context
def train(
    ctx: click.Context, target_name: str | None, resume_from: str | None, keep_pod: bool
) -> None:
    """Fine-tune the child on data/train.jsonl with Axolotl and follow the run to its end."""
    if ctx.invoked_subcommand is not None:
        if target_name is not None or resume_from is not None or keep_pod:
            raise click.UsageError("--target, --resume-from and --keep-pod go without a subcommand")
        return

    async def body(session: Session) -> None:
        await train_run(
            session, target_name=target_name, resume_from=resume_from, keep_pod=keep_pod
        )

    run_flow(lambda: in_session(body))


@train.command()
@click.argument("run_id")
def attach(run_id: str) -> None:
    """Follow a run again until its job ends, then record and report how it ended."""

    async def body(session: Session) -> None:
        await run_commands.attach(session, run_id)

    run_flow(lambda: in_session(body))


@train.command()
@click.argument("run_id")
def stop(run_id: str) -> None:
    """Ask a run's job to save a snapshot and stop, then follow it to its end."""

    async def flow() -> None:
        project = open_project(project_dir())
        runs = Runs(project.runs)
        record = runs.load(run_id)
        run_commands.check_stoppable(record)
        try:
            with project_lock(project):
                pass
        except ProjectLocked:
            run_commands.request_snapshot(runs, record)
            holder = run_commands.lock_holder(project)
            click.echo(
                f"train: overbrainer ({holder}) is using this project: if it follows run "
                f"{run_id}, it collects the snapshot; if not, collect it with "
                f"`overbrainer train attach {run_id}`"
            )
            return

        async def body(session: Session) -> None:
            await run_commands.stop(session, run_id)

        await in_session(body)

    run_flow(flow)


@train.command()
@click.argument("run_id")
def cancel(run_id: str) -> None:
    """Stop a run's job (TERM, then KILL after 10 s) and record it cancelled."""

    async def body(session: Session) -> None:
        await run_commands.cancel(session, run_id)

    run_flow(lambda: in_session(body))
