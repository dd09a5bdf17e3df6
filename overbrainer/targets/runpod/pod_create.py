"""One create call of provisioning (§7.5 step 3): its attempt saved before it is sent, the pod it
made saved after, and the pod of an unclear create looked for."""

from __future__ import annotations

import logging
import time

import trio

from overbrainer.model.pod_status import PodCreated, PodCreating
from overbrainer.model.utc import rfc3339
from overbrainer.targets.runpod.create_body import PodRequest, create_body, pod_name
from overbrainer.targets.runpod.create_check import body_problems
from overbrainer.targets.runpod.errors import (
    INVALID_REQUEST,
    CreateError,
    CreateFailure,
    RunpodError,
)
from overbrainer.targets.runpod.pod_record import Attempt, AttemptResult, PodState
from overbrainer.targets.runpod.pod_run import D, PodRun, ProvisionFailed, R, pod_poll
from overbrainer.targets.runpod.scripts import bootstrap_script
from overbrainer.targets.runpod.types import Pod

log = logging.getLogger(__name__)

CREATE_BOUND = 300.0
"""Seconds a shielded create may take: its attempt saved, the call, the pod it made saved."""


async def create(run: PodRun[D, R], gpu_type: str, data_centers: tuple[str, ...]) -> Pod:
    """One `POST /pods`, its attempt saved before it is sent and the pod it made saved after,
    all shielded (bounded by CREATE_BOUND): a Ctrl-C meanwhile never leaves a pod that
    `pod.json` does not name. A bound that passes is an unclear create (a sweep finds its
    pod)."""
    number = len(run.pod.attempts) + 1
    name = pod_name(run.run_id, number)
    deadline = None if run.keep else int(time.time() + run.target.max_hours * 3600)
    attempt = Attempt(name, gpu_type, rfc3339(), deadline, AttemptResult.SENT)
    assert run.keys is not None
    request = PodRequest(
        run_id=run.run_id,
        attempt=number,
        gpu_type=gpu_type,
        data_center_ids=data_centers,
        deadline_unix=deadline,
        api_url=run.api.http.base_url,
        authorized_key=run.keys.client_public,
        bootstrap=bootstrap_script(),
    )
    body = create_body(run.target, request)
    problems = body_problems(body)
    if problems:
        # Checked before sending: a 400 on a body that passes is about the GPU type.
        raise ProvisionFailed(f"{INVALID_REQUEST} ({'; '.join(problems)}); nothing was sent")
    with trio.move_on_after(CREATE_BOUND, shield=True):
        await run.save(attempts=(*run.pod.attempts, attempt))
        run.publish(PodCreating(name, gpu_type))
        pod = await run.api.create_pod(body)
        await record_created(run, pod)
        return pod
    raise CreateError(CreateFailure.AMBIGUOUS, f"no answer within {int(CREATE_BOUND)} s")


async def reconcile(run: PodRun[D, R]) -> Pod | None:
    """After an unclear create: look for the pod it may have made (5 s, then 15 s later)."""
    name = run.pod.attempts[-1].name
    for wait in (pod_poll(), 3 * pod_poll()):
        await trio.sleep(wait)
        try:
            pods = await run.api.list_pods()
        except RunpodError as error:
            log.info("pod: cannot list pods to find the unclear create's pod: %s", error.message)
            continue
        for pod in pods:
            if pod.name == name:
                await run.set_attempt(AttemptResult.ADOPTED, pod_id=pod.id)
                log.info(
                    "pod: adopted %s, made by the create call that got no clear answer", pod.id
                )
                return pod
    return None


async def record_created(run: PodRun[D, R], pod: Pod) -> None:
    """Save the pod the last create made (or adopted) in `pod.json` and tell the front end."""
    attempt = run.pod.attempts[-1]
    if attempt.result is AttemptResult.SENT:
        await run.set_attempt(AttemptResult.CREATED, pod_id=pod.id)
    deadline = attempt.deadline_unix
    run.created_mono = trio.current_time()
    await run.save(
        state=PodState.PROVISIONING,
        pod_id=pod.id,
        gpu_type=attempt.gpu_type,
        data_center_id=pod.data_center_id,
        cost_per_hour=run.pod.cost_per_hour or (pod.cost if pod.cost > 0 else None),
        created_at=rfc3339(),
        created_unix=int(time.time()),
        deadline_unix=deadline,
        deadline=None if deadline is None else _unix_rfc3339(deadline),
    )
    run.publish(PodCreated(pod.id, attempt.gpu_type, pod.data_center_id, run.pod.cost_per_hour))


def _unix_rfc3339(moment: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))
