"""The Logs view's pod log: what `overbrainer runs logs RUN --pod` prints, read by a task."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

import trio

from overbrainer.config.load import load_settings
from overbrainer.config.secrets import resolve_secret
from overbrainer.flows.pod_logs import CATCH_UP, KeptPodLog, catch_up, no_pod_log, read_kept_pod_log
from overbrainer.flows.setup import CommandOptions
from overbrainer.model.errors import OverbrainerError
from overbrainer.project.directory import open_project
from overbrainer.training import Runs
from overbrainer.ui.tui.messages import Msg, Notice, PodLogLines, TaskDone
from overbrainer.ui.tui.task_spec import TaskSpec

log = logging.getLogger(__name__)

LIMIT = CATCH_UP + 20.0
"""Seconds the whole read may take: the kept files, the key, then Runpod's catch-up."""
Post = Callable[[Msg], None]
FLUSH_LINES = 200
FLUSH_EVERY = 0.25
"""Runpod's lines reach the view in batches: this many, or after this many seconds."""


def _kept(options: CommandOptions, run_id: str) -> tuple[KeptPodLog, Path]:
    """The run's kept pod log and its project's root (blocking)."""
    project = open_project(options.project_dir)
    runs = Runs(project.runs)
    runs.load(run_id)
    return read_kept_pod_log(runs.dir_of(run_id)), project.root


async def _read(task: int, run_id: str, options: CommandOptions, post: Post) -> None:
    kept, root = await trio.to_thread.run_sync(_kept, options, run_id)
    if not kept.lines:
        post(Notice(no_pod_log(run_id)))
        return
    post(PodLogLines(task, run_id, kept.lines, first=True))
    live = kept.live
    if live is None:
        return
    settings = await trio.to_thread.run_sync(load_settings, root, dict(os.environ))
    secret = settings.runpod.api_key
    if secret is None or not secret.text.strip():
        post(Notice(f"pod log of run {run_id}: the kept lines (no Runpod key to catch up)"))
        return
    key = await resolve_secret(secret, "runpod.api_key")
    batch: list[str] = []
    flushed = trio.current_time()

    def flush() -> None:
        nonlocal flushed
        if batch:
            post(PodLogLines(task, run_id, tuple(batch)))
            batch.clear()
        flushed = trio.current_time()

    def emit(line: str) -> None:
        batch.append(line)
        if len(batch) >= FLUSH_LINES or trio.current_time() - flushed >= FLUSH_EVERY:
            flush()

    try:
        ended = await catch_up(settings.runpod.url, key, kept, emit)
    finally:
        flush()
    if ended:
        post(PodLogLines(task, run_id, (ended,)))


async def _cancel_on(detach: trio.Event, scope: trio.CancelScope) -> None:
    await detach.wait()
    scope.cancel()


async def read_pod_log(
    task: int, spec: TaskSpec, options: CommandOptions, detach: trio.Event, post: Post
) -> None:
    """Hand the app the run's pod log, as `runs logs RUN --pod` prints it (with a Runpod key
    and a live pod, Runpod's lines for CATCH_UP seconds after the kept ones); `detach` stops
    it. A failure is the task's one-line error, never fatal to the app."""
    run_id = spec.run_id or ""
    error: str | None = None
    with trio.move_on_after(LIMIT) as limit:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_cancel_on, detach, nursery.cancel_scope)
            try:
                await _read(task, run_id, options, post)
            except OverbrainerError as problem:
                error = problem.message
            except OSError as problem:
                error = f"cannot read the pod log of run {run_id}: {problem.strerror or problem}"
            except Exception as problem:  # Runpod's stream: the kept lines stay shown
                log.exception("the pod log of run %s", run_id)
                error = f"cannot catch up with the pod log of run {run_id}: {problem!r}"
            nursery.cancel_scope.cancel()
    if limit.cancelled_caught:
        post(Notice(f"pod log of run {run_id}: stopped reading after {LIMIT:.0f} s"))
    post(TaskDone(task, error))
