"""The order of work of `train` and `train attach|stop|cancel`, and `run`'s training."""

from __future__ import annotations

import logging

import attrs
import trio

from overbrainer.events.frontend import Frontend, ResultSink
from overbrainer.export.after_training import after_training
from overbrainer.flows.pod_needs import train_needs
from overbrainer.flows.push import push_after_training
from overbrainer.flows.setup import Command, CommandOptions, open_command
from overbrainer.model.errors import OverbrainerError
from overbrainer.project.directory import Project, ProjectLocked, open_project, project_lock
from overbrainer.targets import kind_of
from overbrainer.training import (
    Outcome,
    RunEnding,
    RunRecord,
    Runs,
    Session,
    attach_run,
    cancel_run,
    check_stoppable,
    detached,
    ending,
    lock_holder,
    plan_start,
    recorded_run,
    request_snapshot,
    request_snapshot_at,
    request_stop,
    stop_run,
    summarize,
    train_on_machine,
    train_result,
)

log = logging.getLogger(__name__)


def training_session(command: Command) -> Session:
    """The training session of a set-up command; new run IDs go to its front end at once."""
    return Session(
        command.settings,
        command.project,
        command.bus,
        command.interrupt,
        created=command.front.run_created,
    )


async def export_after(session: Session, sink: ResultSink, record: RunRecord) -> None:
    """Deliver and report what the run's in-job export wrote (`[export] after_training`)."""
    for line in await after_training(session, record):
        sink.line(line)


async def hand_run(sink: ResultSink, runs: Runs, outcome: Outcome) -> None:
    """Hand the run's result to the sink (`--json`'s `"train"`)."""
    sink.result("train", await trio.to_thread.run_sync(train_result, runs, outcome))


async def hand_stored(sink: ResultSink, session: Session, run_id: str) -> None:
    """Hand the result of a run as its record and files say (a detached or cancelled run)."""
    try:
        record = await trio.to_thread.run_sync(session.runs.load, run_id)
        await hand_run(sink, session.runs, await summarize(session, record))
    except (OSError, OverbrainerError) as error:
        # The command's own error says what happened: this only leaves `"train"` unset.
        log.debug("train: no result for run %s: %s", run_id, error)


def report(sink: ResultSink, end: RunEnding) -> None:
    """Hand the run's lines to the sink, then raise the error it ends with."""
    for line in end.lines:
        sink.line(line)
    if end.error is not None:
        raise end.error


async def train_run(
    session: Session,
    sink: ResultSink,
    *,
    target_name: str | None = None,
    resume_from: str | None = None,
    keep_pod: bool = False,
    force: bool = False,
) -> RunRecord:
    """Start a run, follow it and report its end: what `overbrainer train` and `run` do.

    A run created but left (Ctrl-C detaches it) or failed is handed as its record says.
    """
    created: list[str] = []
    told = session.created

    def note(run_id: str) -> None:
        created.append(run_id)
        told(run_id)

    session = attrs.evolve(session, created=note)
    sink.result("train", None)
    plan = await plan_start(
        session, target_name=target_name, resume_from=resume_from, keep_pod=keep_pod, force=force
    )
    try:
        outcome = await train_on_machine(session, plan, await train_needs(session, plan, keep_pod))
    except OverbrainerError:
        if created:
            await hand_stored(sink, session, created[-1])
        raise
    await hand_run(sink, session.runs, outcome)
    report(sink, ending(session.runs, outcome))
    await export_after(session, sink, outcome.record)
    return outcome.record


async def train_after_split(session: Session, sink: ResultSink) -> RunRecord | None:
    """What `overbrainer run` does after `split`: train when `[training]` exists (§1.1).

    Call it inside the command's setup; it raises like `overbrainer train` (Detached, exit
    130, on Ctrl-C).
    """
    if session.settings.training is None:
        log.info("no [training] section in overbrainer.toml: run stops after split")
        return None
    return await train_run(session, sink)


async def train_flow(
    options: CommandOptions,
    front: Frontend,
    *,
    target_name: str | None = None,
    resume_from: str | None = None,
    keep_pod: bool = False,
    force: bool = False,
) -> None:
    """`overbrainer train`: a new run (or one resumed from a snapshot), followed to its end.

    `force` starts it even while another run of this project still trains on the target.
    """
    front.result("train", None)
    front.result("push", None)  # `--json`: null unless `[hub] after_training` pushed
    async with open_command(options, front) as command:
        record = await train_run(
            training_session(command),
            front,
            target_name=target_name,
            resume_from=resume_from,
            keep_pod=keep_pod,
            force=force,
        )
        await push_after_training(command, front, record)


async def attach_flow(options: CommandOptions, front: Frontend, run_id: str) -> None:
    """`overbrainer train attach`: follow a run again until its job ends, then report it."""
    front.result("train", None)
    front.result("push", None)
    async with open_command(options, front) as command:
        session = training_session(command)
        outcome = await attach_run(session, run_id)
        await hand_run(front, session.runs, outcome)
        report(front, ending(session.runs, outcome))
        await export_after(session, front, outcome.record)
        await push_after_training(command, front, outcome.record)


def held_elsewhere(project: Project) -> bool:
    """Whether another overbrainer process holds the project's lock right now."""
    try:
        with project_lock(project):
            return False
    except ProjectLocked:
        return True


async def stop_flow(
    options: CommandOptions, front: Frontend, run_id: str, *, followed: bool = False
) -> None:
    """`overbrainer train stop`: request a snapshot, then follow the run to its end.

    When another overbrainer holds the project, only the request is written: that process
    collects the snapshot if it follows the run, `train attach` does otherwise. `followed`
    (the TUI, which holds the lock itself) says another task of this process follows the run:
    only the request is written, and that task collects the snapshot.
    """
    front.result("train", None)  # `--json`: null when another process collects the snapshot
    project = open_project(options.project_dir)
    runs = Runs(project.runs)
    record = runs.load(run_id)
    check_stoppable(record)
    if followed:
        await _request_beside(options, front, runs, record)
        front.line(
            f"train: snapshot of run {run_id} requested: the task following the run collects it"
        )
        return
    if not options.lock_held and held_elsewhere(project):
        # Read before the request: the holder may collect the snapshot and exit at once.
        holder = lock_holder(project)
        await _request_beside(options, front, runs, record)
        front.line(
            f"train: overbrainer ({holder}) is using this project: if it follows run "
            f"{run_id}, it collects the snapshot; if not, collect it with "
            f"`overbrainer train attach {run_id}`"
        )
        return
    async with open_command(options, front) as command:
        session = training_session(command)
        record, _ = await request_stop(session, run_id)

        def announce() -> None:
            front.line(
                f"train: snapshot of run {run_id} requested: its job saves a checkpoint at the "
                "end of its current step, then stops"
            )

        outcome = await stop_run(session, record, announce)
        await hand_run(front, session.runs, outcome)
        report(front, ending(session.runs, outcome))


async def _request_beside(
    options: CommandOptions, front: Frontend, runs: Runs, record: RunRecord
) -> None:
    """Write the snapshot request while another process holds the project."""
    run_dir = runs.dir_of(record.id)
    if record.job is not None and record.job.dir == str(run_dir.resolve()):
        request_snapshot(runs, record)  # a local run: no settings needed
        return
    async with open_command(options, front, shared=True) as command:
        session = training_session(command)
        record, target = await request_stop(session, record.id)
        reached = recorded_run(
            session, record, lambda: detached(record.id, record.target), "stop_beside"
        )
        async with kind_of(target).reach(reached) as machine:
            await request_snapshot_at(machine, record)


async def cancel_flow(options: CommandOptions, front: Frontend, run_id: str) -> None:
    """`overbrainer train cancel`: stop a run's job and record it cancelled.

    Like `train stop`, it works while another overbrainer holds the project (a follower of
    the run, say): it then runs without the project lock, and the run's own lock orders its
    record write with the follower's.
    """
    front.result("train", None)
    project = open_project(options.project_dir)
    shared = not options.lock_held and held_elsewhere(project)
    if shared:
        log.info(
            "train: overbrainer (%s) is using this project: cancelling run %s beside it",
            lock_holder(project),
            run_id,
        )
    async with open_command(options, front, shared=shared) as command:
        session = training_session(command)
        end = await cancel_run(session, run_id)
        await hand_stored(front, session, run_id)
        report(front, end)
