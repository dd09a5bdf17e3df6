"""A Runpod run's pod as `train stop`, `cancel` and `attach` need it: its `pod.json`, or, when
that record is missing, the pod Runpod still has under the run's name (its record written
again), so a pod that may bill is never called gone without Runpod saying so."""

from __future__ import annotations

import logging
import time

import trio

from overbrainer.model.errors import OverbrainerError, UsageError, WorkFailed
from overbrainer.model.utc import rfc3339
from overbrainer.targets import (
    Pod,
    PodRecord,
    PodState,
    load_pod_record,
    open_runpod,
    pod_of_run,
    save_pod_record,
)
from overbrainer.training.run_pod import api_key
from overbrainer.training.run_store import RunRecord
from overbrainer.training.session import Session

log = logging.getLogger(__name__)


def check_for_pod(run_id: str) -> str:
    """Where to look for a pod that may still bill, and how to delete it."""
    return (
        f"check for a pod still billing with `overbrainer pod ls` and delete it with "
        f"`overbrainer pod rm {run_id}`"
    )


async def run_pod_record(session: Session, record: RunRecord, nothing: str) -> PodRecord | None:
    """The run's pod record: its `pod.json`, or the one rebuilt from the pod Runpod has under
    the run's name when the file is missing; None when Runpod confirms it has no pod of the run.

    UsageError when `pod.json` says its pod was deleted (`nothing` ends the message); WorkFailed
    pointing at `overbrainer pod ls` when the record is missing and Runpod cannot be asked.
    """
    run_dir = session.runs.dir_of(record.id)
    pod = await trio.to_thread.run_sync(load_pod_record, run_dir)
    if pod is not None:
        if pod.live_pod is None:
            raise UsageError(f"run {record.id} has no pod left: {nothing}")
        return pod
    try:
        key = await api_key(session)
        async with open_runpod(session.settings.runpod.url, key) as api:
            pods = [p for p in await api.list_pods() if pod_of_run(p, record.id)]
    except OverbrainerError as error:
        raise WorkFailed(
            f"run {record.id} has no pod record (runs/{record.id}/pod.json is missing) and "
            f"Runpod could not be asked for its pod ({error.message}): {check_for_pod(record.id)}"
        ) from None
    alive = [p for p in pods if not p.status.dead] or pods
    if not alive:
        return None
    found = max(alive, key=_attempt_number)
    if len(pods) > 1:
        log.warning(
            "run %s has %d pods on Runpod (%s): using %s; %s",
            record.id,
            len(pods),
            ", ".join(p.id for p in pods),
            found.id,
            check_for_pod(record.id),
        )
    log.warning(
        "train: runs/%s/pod.json was missing: found pod %s of the run on Runpod by its name",
        record.id,
        found.id,
    )
    rebuilt = _rebuilt(record.id, found)
    await trio.to_thread.run_sync(save_pod_record, run_dir, rebuilt)
    return rebuilt


def _attempt_number(pod: Pod) -> int:
    """The attempt a pod's name ends with (`overbrainer-<id>-<n>`); 0 when it has none."""
    tail = pod.name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _rebuilt(run_id: str, pod: Pod) -> PodRecord:
    """A pod record for a pod found by its name: what Runpod says of it, no deadline known."""
    return PodRecord(
        run_id=run_id,
        state=PodState.RUNNING,
        pod_id=pod.id,
        gpu_type=pod.gpu_id,
        gpu_count=pod.gpu_count,
        data_center_id=pod.data_center_id,
        cost_per_hour=pod.cost if pod.cost > 0 else None,
        created_at=pod.created_at or rfc3339(),
        created_unix=int(time.time()) if pod.created_at is None else None,
    )
