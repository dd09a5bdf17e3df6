"""Deleting a job's pods: its pod, waited for until Runpod no longer shows it; the other pods of
the job (a sweep); its private client key once the last pod is gone."""

from __future__ import annotations

import logging
import time

import trio

from overbrainer.model.errors import WorkFailed
from overbrainer.model.pod_status import DeleteReason, PodDeleted, PodDeleting
from overbrainer.model.utc import rfc3339
from overbrainer.targets.runpod.errors import RunpodError
from overbrainer.targets.runpod.keys import forget_client_key
from overbrainer.targets.runpod.pod_record import DeletedBy, PodState, spend
from overbrainer.targets.runpod.pod_run import D, PodRun, R, pod_poll

log = logging.getLogger(__name__)

DELETE_LIMIT = 60.0


class NotDeleted(WorkFailed):
    """A delete that Runpod did not confirm: the walk stops (a pod may be left)."""


async def sweep(run: PodRun[D, R], keep_pod: str | None = None) -> None:
    """Delete every other pod of the run (its name or marker); undeletable ones are recorded."""
    try:
        pods = await run.api.list_pods()
    except RunpodError as error:
        log.warning("cannot list the pods of run %s: %s", run.run_id, error.message)
        return
    prefix = f"overbrainer-{run.run_id}-"
    strays = list(run.pod.stray_pods)
    for pod in pods:
        ours = pod.run_id == run.run_id or pod.name.startswith(prefix)
        if not ours or pod.id == keep_pod:
            continue
        run.publish(PodDeleting(pod.id, DeleteReason.DUPLICATE))
        try:
            await run.api.delete_pod(pod.id)
            run.publish(PodDeleted(pod.id))
        except RunpodError as error:
            log.warning("cannot delete pod %s of run %s: %s", pod.id, run.run_id, error.message)
            strays.append(pod.id)
    await run.save(stray_pods=tuple(dict.fromkeys(strays)))


async def remove(run: PodRun[D, R], reason: DeleteReason) -> None:
    """Delete the run's pod and wait until Runpod no longer shows it (NotDeleted after 60 s)."""
    pod_id = run.pod.pod_id
    if pod_id is None or run.pod.state is PodState.DELETED:
        return
    run.publish(PodDeleting(pod_id, reason))
    await run.save(state=PodState.DELETING)
    with trio.move_on_after(DELETE_LIMIT, shield=True) as call:
        await run.api.delete_pod(pod_id)
    if call.cancelled_caught:
        raise NotDeleted(f"Runpod did not answer the delete of pod {pod_id} within 60 s")
    with trio.move_on_after(DELETE_LIMIT):
        # Polling: Runpod tells nothing when a pod is finally gone.
        while await run.api.get_pod(pod_id) is not None:  # noqa: ASYNC110
            await trio.sleep(min(2.0, pod_poll()))
        uptime = None if run.pod.created_unix is None else time.time() - run.pod.created_unix
        cost = None
        if uptime is not None and run.pod.cost_per_hour is not None:
            cost = spend(run.pod.cost_per_hour, uptime)
        await run.save(
            state=PodState.DELETED,
            deleted_at=rfc3339(),
            deleted_by=DeletedBy.CLIENT,
            estimated_spend=cost,
        )
        run.publish(PodDeleted(pod_id, uptime, cost))
        return
    raise NotDeleted(f"pod {pod_id} still shows on Runpod 60 s after it was deleted")


async def forget_keys(run: PodRun[D, R]) -> None:
    """Once the run's last pod is gone: delete the private client key (the pod's host key
    never left the pod)."""
    await trio.to_thread.run_sync(forget_client_key, run.runs.dir_of(run.run_id))
