"""A followed pod's rate and spend so far, published as events for the live bar."""

from __future__ import annotations

import time

import trio
import trio.testing

from overbrainer.events.bus import open_event_bus
from overbrainer.events.types import PodSpend
from overbrainer.targets.runpod.cost import SPEND_EVERY, publish_spend
from overbrainer.targets.runpod.pod_record import PodRecord, PodState
from tests.generator_harness import Recorder


def pod(
    state: PodState = PodState.READY,
    cost_per_hour: float | None = 0.44,
    created_ago: float | None = 3600.0,
) -> PodRecord:
    """A pod at $0.44/h created an hour ago, unless told otherwise."""
    created = None if created_ago is None else int(time.time() - created_ago)
    return PodRecord(
        "r1", state, pod_id="pod0001", cost_per_hour=cost_per_hour, created_unix=created
    )


async def test_spend_is_published_at_once_then_every_few_seconds(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen = Recorder()
    with trio.fail_after(3 * SPEND_EVERY):
        async with open_event_bus(observer=seen) as bus:
            with trio.move_on_after(2.5 * SPEND_EVERY):
                await publish_spend(bus, pod())
    assert [type(e) for e in seen.events] == [PodSpend] * 3
    first = seen.events[0]
    assert isinstance(first, PodSpend)
    assert (first.pod_id, first.cost_per_hour) == ("pod0001", 0.44)
    assert 0.44 <= first.spent < 0.45  # an hour up at $0.44/h (plus the test's seconds)


async def test_a_pod_without_rate_creation_or_live_id_publishes_nothing() -> None:
    seen = Recorder()
    with trio.fail_after(5):
        async with open_event_bus(observer=seen) as bus:
            await publish_spend(bus, pod(cost_per_hour=None))
            await publish_spend(bus, pod(created_ago=None))
            await publish_spend(bus, pod(state=PodState.DELETED))
    assert seen.events == []
