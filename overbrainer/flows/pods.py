"""`pod ls`, `pod rm RUN_ID [--force]` and the stray warnings of a Runpod `train` (§7.10)."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import trio

from overbrainer.config.load import load_settings
from overbrainer.config.secrets import resolve_secret
from overbrainer.config.settings import Settings
from overbrainer.events.frontend import Frontend
from overbrainer.events.interrupt import Interrupt
from overbrainer.flows.setup import CommandOptions, open_command
from overbrainer.model.errors import EXIT_INTERRUPTED, EXIT_OK, OverbrainerError, UsageError
from overbrainer.model.job_kind import JobKind
from overbrainer.model.json_values import JsonValue, money, utc_time
from overbrainer.model.pod_status import PodDeleted, pod_line
from overbrainer.project.directory import open_project
from overbrainer.targets import (
    NO_KEY,
    Classified,
    DeletedBy,
    Pod,
    PodRecord,
    PodRecordError,
    PodState,
    RunpodApi,
    RunpodError,
    RunpodKeyError,
    RunView,
    classify_all,
    forget_client_key,
    load_pod_record,
    open_runpod,
    pod_of_run,
    save_pod_record,
    spend,
    stray_warnings,
)
from overbrainer.training import (
    RunNotFound,
    RunRecord,
    Runs,
    RunsError,
    RunState,
    is_valid_run_id,
    parse_rfc3339,
    rfc3339,
)

log = logging.getLogger(__name__)

DELETE_LIMIT = 120.0
"""Seconds a shielded `pod rm` may spend deleting and confirming its pods."""
CONFIRM_LIMIT = 60.0
CONFIRM_INTERVAL = 2.0
PULLED_BY_RM = "pod deleted by `pod rm` before its results were retrieved"
STARTING = frozenset({PodState.CREATING, PodState.PROVISIONING})
FINISHING = frozenset({PodState.KEPT, PodState.AWAITING_RETRIEVAL})


def _folders(root: Path) -> list[str]:
    try:
        return sorted(entry.name for entry in os.scandir(root) if entry.is_dir())
    except FileNotFoundError:
        return []


def holders(runs: Runs) -> dict[str, Runs]:
    """Every run of `runs/` and every export or compare of a run (they may have pods of their
    own), each with the records that hold it (blocking)."""
    found: dict[str, Runs] = {}
    for name in _folders(runs.root):
        if not is_valid_run_id(name):
            continue
        found[name] = runs
        for kind in JobKind:
            jobs = Runs(runs.root / name / kind.dir_name())
            for job in _folders(jobs.root):
                if is_valid_run_id(job):
                    found.setdefault(job, jobs)
    return found


def holder_of(runs: Runs, run_id: str) -> Runs:
    """The records holding `run_id`: `runs`, or a run's exports or compares (blocking)."""
    return holders(runs).get(run_id, runs)


def run_views(runs: Runs) -> dict[str, RunView]:
    """Every run of `runs/` (and export or compare of a run) with its state and pod record
    (blocking)."""
    views: dict[str, RunView] = {}
    for name, holder in holders(runs).items():
        try:
            state: str | None = holder.load(name).state.value
        except RunNotFound:
            continue
        except RunsError:
            state = None
        try:
            record = load_pod_record(holder.root / name)
        except PodRecordError:
            state, record = None, None
        views[name] = RunView(name, state, record)
    return views


async def stray_pod_warnings(api: RunpodApi, runs_root: Path) -> list[str]:
    """What a Runpod `train` warns about at its start: the account's pods that nothing of this
    project will delete (ended runs' pods, strays, pods of runs not in `runs/`, unmarked)."""
    pods = await api.list_pods()
    views = await trio.to_thread.run_sync(run_views, Runs(runs_root))
    return stray_warnings(classify_all(pods, views))


async def _api_key(settings: Settings, interrupt: Interrupt) -> str | None:
    secret = settings.runpod.api_key
    if secret is None or not secret.text.strip():
        raise RunpodKeyError(NO_KEY)
    return await interrupt.race(lambda: resolve_secret(secret, "runpod.api_key"))


# pod ls


@attrs.frozen
class Row:
    """One line of `pod ls`."""

    run: str
    pod: str
    status: str
    gpu: str
    rate: float | None
    created: str
    note: str


def row_line(row: Row) -> str:
    """A row in the table's columns."""
    rate = "-" if row.rate is None else f"{row.rate:.2f}"
    line = (
        f"{row.run:<20} {row.pod:<14} {row.status:<12} {row.gpu:<24} {rate:>5} "
        f"{row.created:<20} {row.note}"
    )
    return line.rstrip()


def row_json(row: Row) -> dict[str, JsonValue]:
    """A row of `pod ls --json`: the table's `-` as null, `created` as RFC 3339 UTC."""

    def known(text: str) -> str | None:
        return None if text == "-" else text

    created = parse_rfc3339(row.created)
    return {
        "run_id": known(row.run),
        "pod_id": known(row.pod),
        "status": row.status.lower(),
        "gpu": known(row.gpu),
        "cost_per_hour": money(row.rate),
        "created": None if created is None else utc_time(created),
        "note": row.note,
    }


HEADER = row_line(Row("RUN", "POD", "STATUS", "GPU", None, "CREATED", "NOTE")).replace(
    "    -", "  $/H", 1
)


def _row(item: Classified) -> Row:
    pod = item.pod
    return Row(
        item.run_id or "-",
        pod.id,
        pod.status.value,
        pod.gpu_id or "-",
        pod.cost,
        pod.created_at or "-",
        item.note,
    )


def _recorded_row(view: RunView, record: PodRecord, status: str, note: str) -> Row:
    return Row(
        view.run_id,
        record.pod_id or "-",
        status,
        record.gpu_type or "-",
        record.cost_per_hour,
        record.created_at or "-",
        note,
    )


async def list_rows(api: RunpodApi, runs: Runs, *, gone_interval: float = 10.0) -> list[Row]:
    """The rows of `pod ls`: the account's overbrainer pods, then recorded pods missing from
    the listing, looked up (GONE ones are recorded deleted; UNCHECKED when the lookup failed)."""
    pods = await api.list_pods()
    views = await trio.to_thread.run_sync(run_views, runs)
    classified = classify_all(pods, views)
    rows = [_row(item) for item in classified]
    listed = {pod.id for pod in pods}
    for view in views.values():
        record = view.pod
        if record is None or record.live_pod is None or record.live_pod in listed:
            continue
        try:
            found = await api.get_pod(record.live_pod)
            gone = found is None and await api.pod_gone(record.live_pod, interval=gone_interval)
        except RunpodError as error:
            rows.append(_recorded_row(view, record, "UNCHECKED", f"cannot look it up: {error}"))
            continue
        if found is not None:
            rows.extend(_row(item) for item in classify_all([found], views))
        elif gone:
            deleted = attrs.evolve(
                record,
                state=PodState.DELETED,
                deleted_at=rfc3339(),
                deleted_by=DeletedBy.UNKNOWN,
            )
            holder = await trio.to_thread.run_sync(holder_of, runs, view.run_id)
            await trio.to_thread.run_sync(save_pod_record, holder.dir_of(view.run_id), deleted)
            rows.append(
                _recorded_row(view, record, "GONE", "no longer on Runpod: recorded deleted")
            )
        else:
            rows.append(_recorded_row(view, record, "UNCHECKED", "Runpod gave no clear answer"))
    return rows


async def pod_ls(options: CommandOptions, front: Frontend, *, gone_interval: float = 10.0) -> int:
    """Print the table of the account's overbrainer pods; Ctrl-C ends it (130). No lock: it
    writes nothing but `deleted` into the `pod.json` of a pod Runpod no longer has."""
    project = open_project(options.project_dir)
    settings = load_settings(project.root)
    async with front.interrupt() as interrupt:
        key = await _api_key(settings, interrupt)
        if key is None:
            return EXIT_INTERRUPTED

        async def ask() -> list[Row]:
            async with open_runpod(settings.runpod.url, key) as api:
                return await list_rows(api, Runs(project.runs), gone_interval=gone_interval)

        rows = await interrupt.race(ask)
    if rows is None:
        return EXIT_INTERRUPTED
    front.result("pods", [row_json(row) for row in rows])
    if not rows:
        front.line("pod: no overbrainer pod on this Runpod account")
        return EXIT_OK
    front.line(HEADER)
    for row in rows:
        front.line(row_line(row))
    return EXIT_OK


# pod rm


class PodKept(OverbrainerError):
    """`pod rm` left the training pod of a run in progress (exit 1)."""


def _uptime(created_unix: float | None, created_at: str | None) -> float | None:
    if created_unix is None and created_at is not None:
        moment = parse_rfc3339(created_at)
        created_unix = None if moment is None else moment.timestamp()
    return None if created_unix is None else max(0.0, time.time() - created_unix)


async def _delete_confirmed(api: RunpodApi, pod_id: str) -> None:
    """Delete the pod and wait until Runpod no longer shows it (≤ 60 s)."""
    await api.delete_pod(pod_id)
    with trio.move_on_after(CONFIRM_LIMIT):
        # Polling is the only way: Runpod tells nothing when a pod is finally gone.
        while await api.get_pod(pod_id) is not None:  # noqa: ASYNC110
            await trio.sleep(CONFIRM_INTERVAL)
        return
    raise RunpodError(f"pod {pod_id} still shows on Runpod 60 s after it was deleted")


@attrs.frozen
class Removal:
    """What `pod rm` found for the run."""

    pods: list[Pod]
    training: str | None
    keep_training: bool


def _plan(run_id: str, view: RunView | None, pods: list[Pod], force: bool) -> Removal:
    if view is None and not force:
        raise UsageError(
            f"run {run_id} is not in this project's runs/; if no other checkout owns it, "
            f"`overbrainer pod rm {run_id} --force`"
        )
    record = view.pod if view is not None else None
    if record is not None and record.state in STARTING and not force:
        raise UsageError(
            f"run {run_id} is still starting its pod: let `overbrainer train` finish, "
            f"or `overbrainer pod rm {run_id} --force`"
        )
    training = record.live_pod if record is not None else None
    in_progress = (
        view is not None
        and view.state in ("preparing", "running")
        and record is not None
        and record.state not in FINISHING
    )
    return Removal(pods, training, in_progress and training is not None and not force)


async def _find_pods(api: RunpodApi, run_id: str, record: PodRecord | None) -> list[Pod]:
    mine = [pod for pod in await api.list_pods() if pod_of_run(pod, run_id)]
    recorded = record.live_pod if record is not None else None
    if recorded is not None and all(pod.id != recorded for pod in mine):
        found = await api.get_pod(recorded)
        if found is not None:
            mine.append(found)
    return mine


async def pod_rm(options: CommandOptions, front: Frontend, run_id: str, force: bool) -> int:
    """Delete the pods of run `run_id`; the training pod of a run in progress only with
    `force`, which also fails the run. Deleting is shielded from Ctrl-C (bounded)."""
    if not is_valid_run_id(run_id):
        raise UsageError(f"{run_id!r} is not a run ID")
    front.result("deleted", ())
    front.result("kept", None)
    async with open_command(options, front) as command:
        project_runs = Runs(command.project.runs)
        views = await trio.to_thread.run_sync(run_views, project_runs)
        runs = await trio.to_thread.run_sync(holder_of, project_runs, run_id)
        view = views.get(run_id)
        record = view.pod if view is not None else None
        key = await _api_key(command.settings, command.interrupt)
        if key is None:
            return EXIT_INTERRUPTED
        async with _api(command.settings, key) as api:
            pods = await command.interrupt.race(lambda: _find_pods(api, run_id, record))
            if pods is None:
                return EXIT_INTERRUPTED
            plan = _plan(run_id, view, pods, force)
            if not plan.pods:
                front.line(f"pod: no pod for run {run_id}")
                return EXIT_OK
            with trio.move_on_after(DELETE_LIMIT, shield=True):
                await _remove(api, runs, run_id, view, plan, front)
    if plan.keep_training:
        front.result("kept", plan.training)
        raise PodKept(
            f"run {run_id} is in progress on pod {plan.training}, which was not deleted; "
            f"delete it too with `overbrainer pod rm {run_id} --force`"
        )
    return EXIT_OK


@attrs.frozen
class DeletedPod:
    """A pod `pod rm` deleted (`--json`'s `deleted`): how long it ran and about what it cost."""

    pod_id: str
    uptime_secs: float | None
    cost: float | None
    """USD at its hourly price over its uptime (None when either is unknown)."""


@contextlib.asynccontextmanager
async def _api(settings: Settings, key: str) -> AsyncIterator[RunpodApi]:
    async with open_runpod(settings.runpod.url, key) as api:
        yield api


async def _remove(
    api: RunpodApi,
    runs: Runs,
    run_id: str,
    view: RunView | None,
    plan: Removal,
    front: Frontend,
) -> None:
    record = view.pod if view is not None else None
    run_dir = runs.dir_of(run_id)
    failures: list[str] = []
    deleted: list[DeletedPod] = []
    for pod in plan.pods:
        if plan.keep_training and pod.id == plan.training:
            continue
        is_training = pod.id == plan.training and record is not None
        if is_training and record is not None:
            record = attrs.evolve(record, state=PodState.DELETING)
            await trio.to_thread.run_sync(save_pod_record, run_dir, record)
        try:
            await _delete_confirmed(api, pod.id)
        except RunpodError as error:
            failures.append(f"pod {pod.id}: {error}")
            continue
        if is_training and record is not None:
            uptime = _uptime(record.created_unix, record.created_at)
            rate = record.cost_per_hour or pod.cost
        else:
            uptime = _uptime(None, pod.created_at)
            rate = pod.cost
        cost = None if uptime is None or not rate else spend(rate, uptime)
        front.line("pod: " + pod_line(PodDeleted(pod.id, uptime, cost)))
        deleted.append(DeletedPod(pod.id, uptime, cost))
        front.result("deleted", tuple(deleted))
        if record is not None and view is not None:
            record = _after_delete(record, pod.id, is_training, cost)
            await trio.to_thread.run_sync(save_pod_record, run_dir, record)
    if record is not None and view is not None and record.live_pod is None and not failures:
        await trio.to_thread.run_sync(forget_client_key, run_dir)
    training_deleted = record is not None and plan.training is not None and record.live_pod is None
    if training_deleted and view is not None and view.state in ("preparing", "running"):
        await trio.to_thread.run_sync(_fail_run, runs, run_id)
    if failures:
        raise RunpodError("not every pod was deleted: " + "; ".join(failures))


def _after_delete(record: PodRecord, pod_id: str, training: bool, cost: float | None) -> PodRecord:
    strays = tuple(s for s in record.stray_pods if s != pod_id)
    if not training:
        return attrs.evolve(record, stray_pods=strays)
    return attrs.evolve(
        record,
        state=PodState.DELETED,
        deleted_at=rfc3339(),
        deleted_by=DeletedBy.POD_RM,
        estimated_spend=cost,
        stray_pods=strays,
    )


def _fail_run(runs: Runs, run_id: str) -> None:
    def change(record: RunRecord) -> RunRecord | None:
        if record.state.ended:
            return None
        return attrs.evolve(record, state=RunState.FAILED, message=PULLED_BY_RM)

    runs.update(run_id, change)
