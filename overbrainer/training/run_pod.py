"""A run's pod as training sees it: its type, the Runpod API key it is reached with, and the
error of a command the user stopped while the pod's job goes on."""

from __future__ import annotations

import time

from overbrainer.config.secrets import resolve_secret
from overbrainer.targets import NO_KEY, PodRun, RunpodKeyError
from overbrainer.training.run_store import RunRecord, Runs
from overbrainer.training.session import Detached, Session

RunPod = PodRun[Runs, RunRecord]
"""The pod of a run, or of a run's compare or export job (their records are run records)."""


async def api_key(session: Session) -> str:
    """The Runpod API key (resolved, raced against Ctrl-C); Detached when interrupted."""
    secret = session.settings.runpod.api_key
    if secret is None or not secret.text.strip():
        raise RunpodKeyError(NO_KEY)
    key = await session.interrupt.race(lambda: resolve_secret(secret, "runpod.api_key"))
    if key is None:
        raise Detached("interrupted before the run started")
    return key


def pod_detached(run: RunPod) -> Detached:
    """The error of a command stopped while its run goes on on the pod: how to follow it again,
    how to delete the pod, and when the pod's watchdog deletes it."""
    run_id, pod = run.run_id, run.pod
    head = (
        f"interrupted: run {run_id} keeps running on pod {pod.pod_id} "
        f"(${pod.cost_per_hour or 0.0:.2f}/h); follow it again with "
        f"`overbrainer train attach {run_id}`, or delete the pod with "
        f"`overbrainer pod rm {run_id}`."
    )
    if run.keep:
        return Detached(
            f"{head} The pod is kept with no time limit (--keep-pod): "
            f"`ssh -F runs/{run_id}/ssh/config overbrainer-{run_id}`."
        )
    lease_end = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 900))
    return Detached(
        f"{head} The watchdog deletes the pod {run.target.retrieve_grace_minutes} min after "
        "the job ends if its results are not retrieved, and at "
        f"{pod.deadline or lease_end} or 15 min from now (once the lease this command held "
        "runs out), whichever is later."
    )
