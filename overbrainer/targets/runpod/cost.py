"""What a run's pod costs: its spend as events while followed, and its cost cap
(`max_cost_usd`, §7.6-§7.7): the cap's times, arming, the guard."""

from __future__ import annotations

import logging
import time

import attrs
import trio

from overbrainer.events.bus import EventBus
from overbrainer.events.types import PodSpend
from overbrainer.model.errors import OverbrainerError
from overbrainer.targets.executor import Executor
from overbrainer.targets.job_names import SNAPSHOT_REQUEST
from overbrainer.targets.runpod.pod_record import PodRecord, spend

log = logging.getLogger(__name__)

SNAPSHOT_LEAD = 900.0
"""The job is asked for a snapshot at least this many seconds before the cap."""
SHORT_CAP = 1800.0
SPEND_EVERY = 10.0
"""Seconds between two `PodSpend` events of a followed pod (a cent at $3.60/h)."""


@attrs.frozen
class CostCap:
    """When the pod's spend reaches 95 % of the cap (or 15 min before it), and the cap."""

    rate: float
    cap: float
    created: float
    snapshot_at: float
    delete_at: float


def cost_cap(pod: PodRecord) -> CostCap | None:
    """The pod's cost cap, None when it has none (kept, no cap, no rate yet)."""
    cap, rate, created = pod.max_cost_usd, pod.cost_per_hour, pod.created_unix
    if pod.keep or cap is None or not rate or created is None:
        return None
    delete_at = created + cap / rate * 3600
    snapshot_at = min(created + 0.95 * (delete_at - created), delete_at - SNAPSHOT_LEAD)
    return CostCap(rate, cap, created, snapshot_at, delete_at)


async def publish_spend(bus: EventBus, pod: PodRecord, every: float = SPEND_EVERY) -> None:
    """Publish the pod's rate and spend so far at once, then every `every` s (forever).

    A pod whose rate, creation time or ID is not known yet publishes nothing.
    """
    rate, created, pod_id = pod.cost_per_hour, pod.created_unix, pod.live_pod
    if not rate or created is None or pod_id is None:
        return
    while True:
        bus.publish(PodSpend(pod_id, rate, spend(rate, time.time() - created)))
        await trio.sleep(every)


async def arm_cost_cap(pod: PodRecord, remote_dir: str, executor: Executor) -> None:
    """Write `.pod/snapshot_at` and `.pod/cost_cap_at` for the watchdog, before the job."""
    limits = cost_cap(pod)
    if limits is None:
        return
    if limits.delete_at - limits.created < SHORT_CAP:
        log.warning(
            "max_cost_usd $%.2f buys less than 30 min of the pod at $%.2f/h (at least $%.2f "
            "buys 30 min)",
            limits.cap,
            limits.rate,
            limits.rate / 2,
        )
    await executor.put_file(f"{remote_dir}/.pod/snapshot_at", str(int(limits.snapshot_at)))
    await executor.put_file(f"{remote_dir}/.pod/cost_cap_at", str(int(limits.delete_at)))


async def _until(moment: float) -> None:
    await trio.sleep(max(0.0, moment - time.time()))


async def guard_cost(
    limits: CostCap, remote_dir: str, executor: Executor, reached: trio.Event
) -> None:
    """At `snapshot_at` ask the job for a snapshot; at `delete_at` set `reached` (the caller
    then deletes the pod)."""
    await _until(limits.snapshot_at)
    now = time.time()
    spent = spend(limits.rate, now - limits.created)
    if limits.snapshot_at == limits.delete_at - SNAPSHOT_LEAD:
        minutes = max(0, round((limits.delete_at - now) / 60))
        log.warning(
            "the pod reaches max_cost_usd $%.2f in %d min ($%.2f spent so far): its job is "
            "stopped with a snapshot 15 min before the cap",
            limits.cap,
            minutes,
            spent,
        )
    else:
        log.warning(
            "the pod spent $%.2f of max_cost_usd $%.2f (%d%%): its job is stopped with a snapshot",
            spent,
            limits.cap,
            round(100 * spent / limits.cap),
        )
    try:
        await executor.put_file(f"{remote_dir}/{SNAPSHOT_REQUEST}", "cost")
    except (OverbrainerError, OSError) as error:
        log.warning("cannot ask the job for a snapshot before the cost cap: %s", error)
    await _until(limits.delete_at)
    reached.set()
