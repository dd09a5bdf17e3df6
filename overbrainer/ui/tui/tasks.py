"""Background tasks: each runs the same flow as its CLI command, with a TuiFrontend of its own."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import attrs
import trio

from overbrainer.events.bus import Lagged, Observer, Subscription, open_event_bus
from overbrainer.events.frontend import Frontend, Line, Report
from overbrainer.events.types import PIPELINE_STAGES, Stage
from overbrainer.flows.compare import compare_flow
from overbrainer.flows.export import export_flow
from overbrainer.flows.pipeline import PipelineRequest, pipeline_flow
from overbrainer.flows.push import push_flow
from overbrainer.flows.setup import CommandOptions, single_error
from overbrainer.flows.train import attach_flow, cancel_flow, stop_flow, train_flow
from overbrainer.model.error_groups import error_leaves
from overbrainer.model.errors import EXIT_INTERRUPTED, OverbrainerError
from overbrainer.pipeline.editing import delete_record
from overbrainer.project.directory import open_project
from overbrainer.ui.front import TuiFrontend
from overbrainer.ui.tui.auto_plan import estimate_run
from overbrainer.ui.tui.compare_plan import prepare_compare
from overbrainer.ui.tui.load import data_counts, glimpse_project, latest_answer, load_rest
from overbrainer.ui.tui.messages import (
    ComparePrepared,
    Counted,
    Glimpsed,
    Loaded,
    Msg,
    Previewed,
    PushPlanned,
    TaskDone,
    TaskEvent,
    TaskLagged,
    TaskReport,
)
from overbrainer.ui.tui.pod_log import read_pod_log
from overbrainer.ui.tui.push_plan import plan_lines
from overbrainer.ui.tui.task_spec import READ_KINDS, TaskKind, TaskSpec

log = logging.getLogger(__name__)

FORWARD_GRACE = 5.0
"""Seconds the forwarder may take to hand the app what the closed bus still held."""

CAPACITY = 32_768
"""Events a task's bus holds for the app before the oldest are dropped (counted)."""

Post = Callable[[Msg], None]


@attrs.define
class TaskHandle:
    """What the app keeps of a running task: its detach event (a pod still provisioning is
    given up with it: the interrupt cancels the provisioning)."""

    detach: trio.Event = attrs.Factory(trio.Event)


def flow_of(spec: TaskSpec, options: CommandOptions) -> Callable[[Frontend], Awaitable[None]]:
    """The CLI flow `spec` runs (the project lock is the app's: `options.lock_held`)."""
    kind, run_id = spec.kind, spec.run_id or ""
    if kind is TaskKind.STAGE:
        topics = () if spec.topic is None else (spec.topic,)
        stage = PipelineRequest((spec.stage or Stage.SUBTOPICS,), topics, force=spec.force)
        return lambda front: pipeline_flow(options, front, stage)
    if kind is TaskKind.AUTO:
        run = PipelineRequest(PIPELINE_STAGES, whole_run=True, train=spec.train)
        return lambda front: pipeline_flow(options, front, run)
    if kind is TaskKind.TRAIN:
        return lambda front: train_flow(options, front)
    if kind is TaskKind.RESUME:
        return lambda front: train_flow(options, front, resume_from=run_id)
    if kind is TaskKind.ATTACH:
        return lambda front: attach_flow(options, front, run_id)
    if kind is TaskKind.STOP:
        return lambda front: stop_flow(options, front, run_id, followed=spec.followed)
    if kind is TaskKind.CANCEL:
        return lambda front: cancel_flow(options, front, run_id)
    if kind is TaskKind.COMPARE:
        return lambda front: compare_flow(options, front, run_id=spec.run_id)
    if kind is TaskKind.REJUDGE:
        rejudge = spec.compare_id
        return lambda front: compare_flow(options, front, run_id=spec.run_id, rejudge=rejudge)
    if kind is TaskKind.PUSH:
        return lambda front: push_flow(options, front, run_id)
    if kind is TaskKind.EXPORT:
        return lambda front: export_flow(options, front, run_id)
    raise AssertionError(kind)


async def _forward(task: int, subscription: Subscription, post: Post) -> None:
    """Hand every event of the task's bus to the app, in order, until the bus closes."""
    while True:
        try:
            items = await subscription.receive_batch()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            return
        for item in items:
            if isinstance(item, Lagged):
                post(TaskLagged(task, item.n))
            else:
                post(TaskEvent(task, item, trio.current_time()))


def _only_cancelled(error: BaseException) -> bool:
    """Whether `error` is a group of `trio.Cancelled` alone: a flow's nurseries, cancelled."""
    if not isinstance(error, BaseExceptionGroup):
        return False
    return all(isinstance(leaf, trio.Cancelled) for leaf in error_leaves(error))


def _error_of(error: BaseException) -> OverbrainerError | None:
    if isinstance(error, OverbrainerError):
        return error
    if isinstance(error, BaseExceptionGroup):
        return single_error(error)
    return None


async def _read(task: int, spec: TaskSpec, options: CommandOptions, post: Post) -> None:
    """Read the project for the views; a failure is shown, never fatal to the app."""
    try:
        project = open_project(options.project_dir)
        if spec.kind is TaskKind.PUSH_PLAN:
            run_id = spec.run_id or ""
            try:
                lines = await trio.to_thread.run_sync(plan_lines, project, run_id)
            except OverbrainerError as error:
                post(PushPlanned(task, run_id, error=error.message))
                return
            post(PushPlanned(task, run_id, lines))
        elif spec.kind is TaskKind.PREPARE_COMPARE:
            try:
                prepared = await prepare_compare(project, spec.run_id)
            except OverbrainerError as error:
                post(ComparePrepared(task, error=error.message))
                return
            post(ComparePrepared(task, prepared.run_id, prepared.lines))
        elif spec.kind is TaskKind.COUNT:
            post(Counted(task, await trio.to_thread.run_sync(data_counts, project)))
        elif spec.kind is TaskKind.PREVIEW:
            post(Previewed(task, await trio.to_thread.run_sync(latest_answer, project)))
        else:
            glimpse = await trio.to_thread.run_sync(glimpse_project, project)
            post(Glimpsed(task, glimpse))
            rest = await trio.to_thread.run_sync(load_rest, project, glimpse)
            post(Loaded(task, rest))
    except OverbrainerError as error:
        post(TaskDone(task, f"cannot read the project: {error.message}"))
    except OSError as error:
        post(TaskDone(task, f"cannot read the project: {error.strerror or error}"))


async def _delete(task: int, spec: TaskSpec, options: CommandOptions, post: Post) -> None:
    """Delete one dataset record (and what hangs from it); the line says what went."""
    name, record_id = spec.record_file, spec.record_id
    try:
        project = open_project(options.project_dir)
        deleted = await trio.to_thread.run_sync(delete_record, project, name, record_id)
    except OverbrainerError as error:
        post(TaskDone(task, error.message))
        return
    except OSError as error:
        post(TaskDone(task, f"cannot delete {record_id}: {error.strerror or error}"))
        return
    line = deleted.line(name, record_id)
    log.info("%s", line)
    post(TaskReport(task, Line(line)))
    post(TaskDone(task))


async def run_task(
    task: int,
    spec: TaskSpec,
    options: CommandOptions,
    handle: TaskHandle,
    post: Post,
    metrics: Observer | None = None,
) -> None:
    """Run `spec`; its events and reports reach the app (and `metrics`, the TUI's endpoint)
    before its TaskDone."""
    if spec.kind is TaskKind.POD_LOG:
        await read_pod_log(task, spec, options, handle.detach, post)
        return
    if spec.kind is TaskKind.ESTIMATE_RUN:
        await estimate_run(task, options, handle.detach, post)
        return
    if spec.kind in READ_KINDS:
        await _read(task, spec, options, post)
        return
    if spec.kind is TaskKind.DELETE:
        await _delete(task, spec, options, post)
        return
    flow = flow_of(spec, options)
    done = TaskDone(task)

    def report(item: Report) -> None:
        if isinstance(item, Line):  # what the CLI prints on stdout: kept in the Logs view too
            log.info("%s", item.text)
        post(TaskReport(task, item))

    async with trio.open_nursery() as forwarding:
        async with open_event_bus(CAPACITY, metrics) as bus:
            forwarding.start_soon(_forward, task, bus.subscribe(), post)
            front = TuiFrontend(bus, handle.detach, report)
            try:
                await flow(front)
            except (Exception, BaseExceptionGroup) as error:
                if _only_cancelled(error):
                    raise  # the app's nursery was cancelled (the app quits): nothing failed
                found = _error_of(error)
                if found is None:
                    log.exception("%s failed (a bug)", spec.label)
                    done = TaskDone(task, f"{spec.label} failed: {error!r}")
                else:
                    interrupted = found.exit_code == EXIT_INTERRUPTED
                    level = logging.INFO if interrupted else logging.ERROR
                    log.log(level, "%s: %s", spec.label, found.message)
                    done = TaskDone(task, found.message, interrupted=interrupted)
        forwarding.cancel_scope.deadline = trio.current_time() + FORWARD_GRACE
    post(done)
