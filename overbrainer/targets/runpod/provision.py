"""Provisioning a job's Runpod pod (§7.5 steps 1-4): its keys, then the walk over GPU types (the
next type when one cannot be placed or its pod never becomes ready) until a pod is ready."""

from __future__ import annotations

import logging

import trio

from overbrainer.model.pod_status import DeleteReason, PodReady, PodUnavailable
from overbrainer.model.utc import rfc3339
from overbrainer.targets.runpod.errors import CreateError, CreateFailure
from overbrainer.targets.runpod.gpu_walk import Walk, choices, reread, walk_failure
from overbrainer.targets.runpod.keys import make_keys
from overbrainer.targets.runpod.pod_create import create, reconcile, record_created
from overbrainer.targets.runpod.pod_delete import remove, sweep
from overbrainer.targets.runpod.pod_ready import wait_ready
from overbrainer.targets.runpod.pod_record import AttemptResult, PodState
from overbrainer.targets.runpod.pod_run import RECORD_BOUND, D, PodRun, ProvisionFailed, R
from overbrainer.targets.runpod.types import Pod

log = logging.getLogger(__name__)

AMBIGUOUS_PER_TYPE = 2


async def provision(run: PodRun[D, R]) -> bool:
    """Keys, the create walk, a ready pod (§7.5 steps 1-4).

    False when the user stopped it between steps (the caller deletes any pod). Raises
    ProvisionFailed (or another OverbrainerError) when no pod became ready.
    """
    run_dir = run.runs.dir_of(run.run_id)
    run.keys = await make_keys(run_dir, run.run_id)
    if run.stopped():
        return False
    if run.target.network_volume_id is not None:
        volume = await run.api.network_volume(run.target.network_volume_id)
        log.info("pod: network volume %s holds %d GB", volume.id, volume.size_gb)
    walk = await choices(run)
    problems: list[str] = []
    not_ready: list[str] = []
    while walk.types:
        if run.stopped():
            return False
        gpu_type = walk.types.pop(0)
        walk.tried(gpu_type)
        made = await _try_type(run, gpu_type, walk, problems, not_ready)
        if made is not None:
            return await _after_ready(run, made)
        if walk.auto:
            await reread(run, walk)
    all_refused = bool(problems) and walk.refused == len(problems)
    raise ProvisionFailed(walk_failure(problems, not_ready, run.target, all_refused))


async def _try_type(
    run: PodRun[D, R],
    gpu_type: str,
    walk: Walk,
    problems: list[str],
    not_ready: list[str],
) -> Pod | None:
    """Create a pod of one GPU type and wait until it is ready; None to try the next type."""
    ambiguous = 0
    while True:
        try:
            pod = await create(run, gpu_type, walk.data_centers)
        except CreateError as error:
            match error.failure:
                case CreateFailure.UNAVAILABLE | CreateFailure.REFUSED | CreateFailure.FORBIDDEN:
                    result = (
                        AttemptResult.FORBIDDEN
                        if error.failure is CreateFailure.FORBIDDEN
                        else AttemptResult.UNAVAILABLE
                    )
                    await run.set_attempt(result, detail=error.message)
                    run.publish(PodUnavailable(gpu_type, error.message))
                    if error.failure is CreateFailure.REFUSED:
                        walk.refused += 1
                    problems.append(f"{gpu_type}: {error.message}")
                    return None
                case CreateFailure.AMBIGUOUS:
                    await run.set_attempt(AttemptResult.AMBIGUOUS, detail=error.message)
                    adopted = await reconcile(run)
                    if adopted is not None:
                        pod = adopted
                        with trio.fail_after(RECORD_BOUND, shield=True):
                            await record_created(run, pod)
                    else:
                        ambiguous += 1
                        if ambiguous < AMBIGUOUS_PER_TYPE and not run.stopped():
                            continue
                        problems.append(f"{gpu_type}: {error.message}")
                        return None
                case _:
                    result = (
                        AttemptResult.REFUSED
                        if error.failure is CreateFailure.NO_CREDITS
                        else AttemptResult.REJECTED
                    )
                    await run.set_attempt(result, detail=error.message)
                    raise ProvisionFailed(error.message) from None
        break
    why = await wait_ready(run, pod)
    if why is None:
        return pod
    if run.stopped():
        return None
    await run.set_attempt(AttemptResult.NOT_READY, detail=why)
    await remove(run, DeleteReason.NOT_READY)
    await run.save(state=PodState.CREATING, pod_id=None, ssh=None, host_key=None)
    not_ready.append(why)
    return None


async def _after_ready(run: PodRun[D, R], pod: Pod) -> bool:
    ready_after = trio.current_time() - (run.created_mono or trio.current_time())
    await run.save(state=PodState.READY, ready_at=rfc3339())
    run.publish(PodReady(pod.id, ready_after, run.pod.deadline))
    await sweep(run, keep_pod=pod.id)
    return not run.stopped()
