"""The end of a job's pod (the teardown of the runpod kind): its logs kept here, then the pod
kept or deleted, its keys forgotten; shared by `train`, `compare` and `export`."""

from __future__ import annotations

import logging
from pathlib import Path

import trio

from overbrainer.model.errors import OverbrainerError
from overbrainer.model.pod_status import DeleteReason, PodKept
from overbrainer.model.redact import redact
from overbrainer.storage import write_atomic
from overbrainer.targets.executor import Executor
from overbrainer.targets.runpod.pod_delete import forget_keys, remove, sweep
from overbrainer.targets.runpod.pod_logs import (
    MAX_TAIL,
    PodLogsGone,
    keep_lines,
    read_cursor,
    stream_pod_logs,
)
from overbrainer.targets.runpod.pod_record import POD_DIR, AttemptResult, PodState
from overbrainer.targets.runpod.pod_run import D, PodRun, R, pod_poll

log = logging.getLogger(__name__)

DRAIN_LIMIT = 5.0
"""Seconds the pod's log stream is read at most before the pod is deleted."""
END_BOUND = 600.0
"""Seconds a shielded delete of the pod (and its keys) may take."""
UNCLEAR = (AttemptResult.AMBIGUOUS, AttemptResult.SENT)
"""Attempts that may have made a pod `pod.json` does not name: a sweep looks for it."""


def error_text(error: BaseException) -> str:
    """What an error says to the user (its type when it says nothing)."""
    text = error.message if isinstance(error, OverbrainerError) else str(error)
    return text or type(error).__name__


async def clean_up(run: PodRun[D, R], reason: DeleteReason) -> bool:
    """Delete the run's pod (and, after unclear creates, any pod of the run); forget its keys
    when none is left. Whether a pod may be left."""
    left = True
    with trio.move_on_after(END_BOUND, shield=True):
        try:
            await remove(run, reason)
            if any(a.result in UNCLEAR for a in run.pod.attempts):
                await sweep(run)
                log.warning(
                    "the create calls of %s got no clear answer from Runpod: a pod may "
                    "still appear; check `overbrainer pod ls`",
                    run.subject,
                )
            left = bool(run.pod.stray_pods)
        except (OverbrainerError, OSError) as error:
            log.warning("cannot delete the pod of %s: %s", run.subject, error_text(error))
        if not left:
            await forget_keys(run)
    return left


async def capture_pod_log(run: PodRun[D, R]) -> None:
    """Keep Runpod's own log of the pod in `.pod/pod.log` while overbrainer follows it:
    from its cursor (or the last 5000 lines), reconnecting whenever the stream ends."""
    while True:
        if await drain_pod_log(run):
            return
        await trio.sleep(pod_poll())


async def drain_pod_log(run: PodRun[D, R]) -> bool:
    """One pass over the pod's log stream into `.pod/pod.log`; True once the pod is gone."""
    pod_id = run.pod.live_pod
    if pod_id is None:
        return True
    run_dir = run.runs.dir_of(run.run_id)
    cursor = await trio.to_thread.run_sync(read_cursor, run_dir)
    try:
        async for line in stream_pod_logs(
            run.api.http, pod_id, tail=MAX_TAIL if cursor is None else None, cursor=cursor
        ):
            await trio.to_thread.run_sync(keep_lines, run_dir, [line])
    except PodLogsGone:
        return True
    except (OverbrainerError, OSError) as error:
        log.debug("pod: cannot read the pod's log stream: %s", error_text(error))
    return False


POD_LOGS = ("watchdog.log", "bootstrap.log")
POD_LOG_BYTES = 4 * 1024 * 1024


async def copy_pod_logs(executor: Executor, remote_dir: str, local: Path) -> None:
    """The pod's own logs (in `remote_dir/.pod/`) into `local` (≤ 4 MiB each, secrets
    masked); a log that cannot be read is a warning naming it and why."""
    for name in POD_LOGS:
        try:
            data = await executor.read_from(f"{remote_dir}/{POD_DIR}/{name}", 0, POD_LOG_BYTES)
        except (OverbrainerError, OSError) as error:
            log.warning("pod: cannot keep the pod's %s/%s: %s", POD_DIR, name, error_text(error))
            continue
        if not data:
            continue
        text = redact(data.decode("utf-8", "replace"))
        await trio.to_thread.run_sync(_write_log, local / name, text)


def _write_log(path: Path, text: str) -> None:
    path.parent.mkdir(mode=0o700, exist_ok=True)
    write_atomic(path, text)


POD_NOT_ENDED = "the pod did not end in time"


async def end_pod_bounded(run: PodRun[D, R], executor: Executor, *, retrieved: bool) -> str | None:
    """`end_pod`, shielded and bounded by END_BOUND: the problem, or None; a bound that
    passes is a problem too (the pod may be left)."""
    problem: str | None = POD_NOT_ENDED
    with trio.move_on_after(END_BOUND, shield=True):
        problem = await end_pod(run, executor, retrieved=retrieved)
    return problem


async def end_pod(run: PodRun[D, R], executor: Executor, *, retrieved: bool) -> str | None:
    """Retrieved: mark it on the pod, then keep or delete the pod and forget the keys.
    Not retrieved: leave it to the watchdog's retrieve grace. The problem, or None."""
    pod_id = run.pod.pod_id
    await copy_pod_logs(executor, run.remote_dir, run.runs.dir_of(run.run_id) / POD_DIR)
    with trio.move_on_after(DRAIN_LIMIT):
        await drain_pod_log(run)
    if not retrieved:
        state = PodState.KEPT if run.keep else PodState.AWAITING_RETRIEVAL
        await run.save(state=state)
        log.warning(
            "the results of run %s were not retrieved: pod %s stays until its watchdog's "
            "retrieve grace ends; retrieve them with `overbrainer train attach %s`, or remove "
            "the pod with `overbrainer pod rm %s`",
            run.run_id,
            pod_id,
            run.run_id,
            run.run_id,
        )
        return None
    try:
        await executor.put_file(f"{run.remote_dir}/.pod/retrieved", "")
        if run.keep:
            await run.save(state=PodState.KEPT)
            assert pod_id is not None
            run.publish(PodKept(pod_id))
            log.info(
                "pod %s kept (--keep-pod): `ssh -F %s/ssh/config overbrainer-%s`; remove "
                "it with `overbrainer pod rm %s`; nothing deletes it automatically",
                pod_id,
                run.shown_dir,
                run.run_id,
                run.run_id,
            )
            return None
        await remove(run, DeleteReason.RETRIEVED)
        await sweep(run)
    except (OverbrainerError, OSError) as error:
        return error_text(error)
    if not run.pod.stray_pods:
        await forget_keys(run)
    return None
