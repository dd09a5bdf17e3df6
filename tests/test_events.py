"""The event bus: twins of the reference's tests, cancellation, and a property test."""

from __future__ import annotations

import attrs
import pytest
import trio
import trio.lowlevel
from hypothesis import given, settings
from hypothesis import strategies as st

from overbrainer.events.bus import Lagged, Observers, Subscription, open_event_bus
from overbrainer.events.types import (
    EVENT_TYPES,
    PIPELINE_STAGES,
    Event,
    ItemDone,
    ItemFailed,
    ItemResult,
    Stage,
    StageFinished,
    StageStarted,
    StageStats,
    item_result,
)
from overbrainer.model.usage import Price, Usage
from tests.tasks import live_tasks


@attrs.define
class RecordingObserver:
    events: list[tuple[int, Event]] = attrs.Factory(list)
    closed_buses: list[int] = attrs.Factory(list)

    def event(self, bus: int, event: Event) -> None:
        self.events.append((bus, event))

    def closed(self, bus: int) -> None:
        self.closed_buses.append(bus)


def numbered(n: int) -> ItemDone:
    return ItemDone(Stage.ANSWERS, str(n))


async def drain(subscription: Subscription) -> list[Event | Lagged]:
    received: list[Event | Lagged] = []
    async for item in subscription:
        received.append(item)
    return received


async def test_subscribers_receive_events_published_after_they_subscribed() -> None:
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery, open_event_bus() as bus:
            bus.publish(numbered(0))
            first = bus.subscribe()
            bus.publish(numbered(1))
            second = bus.subscribe()
            bus.publish(numbered(2))
            results: dict[str, list[Event | Lagged]] = {}

            async def collect(name: str, sub: Subscription) -> None:
                results[name] = await drain(sub)

            nursery.start_soon(collect, "first", first)
            nursery.start_soon(collect, "second", second)
        assert results == {"first": [numbered(1), numbered(2)], "second": [numbered(2)]}


async def test_observer_sees_every_event_and_the_end_without_subscribers() -> None:
    observer = RecordingObserver()
    with trio.fail_after(5):
        async with open_event_bus(capacity=4, observer=observer) as bus:
            for n in range(10_000):
                bus.publish(numbered(n))
            bus_id = bus.id
    assert [event for _, event in observer.events] == [numbered(n) for n in range(10_000)]
    assert {b for b, _ in observer.events} == {bus_id}
    assert observer.closed_buses == [bus_id]


async def test_observer_sees_its_buses_apart_and_each_end_once() -> None:
    observer = RecordingObserver()
    async with open_event_bus(observer=observer) as one, open_event_bus(observer=observer) as two:
        assert one.id != two.id
        one.publish(numbered(1))
        two.publish(numbered(2))
    assert observer.events == [(one.id, numbered(1)), (two.id, numbered(2))]
    assert sorted(observer.closed_buses) == sorted([one.id, two.id])


def test_item_results() -> None:
    usage = Usage(1, 2)
    a = Stage.ANSWERS
    assert item_result(ItemDone(a, "x", usage, None, False)) == (a, ItemResult.DONE)
    assert item_result(ItemDone(a, "x", usage, None, True)) == (a, ItemResult.EXCLUDED)
    assert item_result(ItemDone(a, "x", None, None, True)) == (a, ItemResult.SKIPPED)
    assert item_result(ItemFailed(a, "x", "boom", retryable=False)) == (a, ItemResult.FAILED)
    assert item_result(ItemFailed(a, "x", "boom", retryable=True)) is None
    assert item_result(StageStarted(a, 3)) is None
    assert [r.value for r in ItemResult] == ["done", "skipped", "excluded", "failed"]


def test_stage_names_are_lowercase_and_sort_in_pipeline_order() -> None:
    names = ["subtopics", "questions", "answers", "quality", "split", "judge"]
    assert [str(s) for s in Stage] == names
    assert [s.value for s in Stage] == names
    # `run` runs these (and `quality` when a judge is set); `judge` is `compare`'s only.
    assert [s.value for s in PIPELINE_STAGES] == ["subtopics", "questions", "answers", "split"]
    assert sorted([Stage.SPLIT, Stage.SUBTOPICS, Stage.ANSWERS]) == [
        Stage.SUBTOPICS,
        Stage.ANSWERS,
        Stage.SPLIT,
    ]
    # The reference's 13, then our ConcurrencyChanged, PodSpend, RateLimitWait.
    assert len(EVENT_TYPES) == 16


def test_cost_is_known_only_with_a_price() -> None:
    usage = Usage(1_000_000, 500_000)
    unpriced = StageStats().add_usage(usage)
    assert unpriced.cost is None
    assert unpriced.usage == usage
    priced = unpriced.add_usage(usage, Price(1.0, 2.0))
    assert priced.cost == pytest.approx(2.0)
    assert priced.usage == Usage(2_000_000, 1_000_000)


def test_merge_adds_counts_usage_and_known_costs() -> None:
    a = StageStats(done=1, skipped=2, failed=3, excluded=4, usage=Usage(5, 6), cost=None)
    b = StageStats(done=10, skipped=20, failed=30, excluded=40, usage=Usage(50, 60), cost=0.5)
    merged = a.merge(b)
    assert merged == StageStats(11, 22, 33, 44, Usage(55, 66), 0.5)
    assert a.merge(StageStats()).cost is None
    assert merged.merge(b).cost == pytest.approx(1.0)


async def test_slow_subscriber_lags_by_the_oldest_events() -> None:
    with trio.fail_after(5):
        async with open_event_bus(capacity=1024) as bus:
            subscription = bus.subscribe()
            for n in range(2048):
                bus.publish(numbered(n))
            assert await subscription.receive() == Lagged(1024)
            assert await subscription.receive() == numbered(1024)


async def test_larger_bus_keeps_more_for_a_slow_subscriber() -> None:
    with trio.fail_after(5):
        async with open_event_bus(capacity=4096) as bus:
            subscription = bus.subscribe()
            for n in range(2048):
                bus.publish(numbered(n))
            assert await subscription.receive() == numbered(0)


async def test_capacity_is_at_least_one() -> None:
    async with open_event_bus(capacity=0) as bus:
        subscription = bus.subscribe()
        bus.publish(numbered(0))
        bus.publish(numbered(1))
        assert await subscription.receive() == Lagged(1)
        assert await subscription.receive() == numbered(1)


async def test_cancelling_an_open_bus_ends_fan_out_and_subscribers_and_closes_once() -> None:
    observer = RecordingObserver()
    before = live_tasks()
    received: list[Event | Lagged] = []
    with trio.fail_after(5):
        async with trio.open_nursery() as outer:
            with trio.CancelScope() as scope:
                async with open_event_bus(observer=observer) as bus:
                    subscription = bus.subscribe()

                    async def consume() -> None:
                        received.extend(await drain(subscription))

                    outer.start_soon(consume)
                    bus.publish(numbered(1))
                    scope.cancel()
                    await trio.sleep_forever()
        assert scope.cancelled_caught
    assert received == [numbered(1)]
    assert observer.closed_buses == [bus.id]
    assert live_tasks() == before


async def test_publish_after_close_is_ignored_and_late_subscription_is_ended() -> None:
    observer = RecordingObserver()
    async with open_event_bus(observer=observer) as bus:
        pass
    bus.publish(numbered(1))
    assert observer.events == []
    with pytest.raises(trio.EndOfChannel):
        await bus.subscribe().receive()


async def test_observer_failure_never_reaches_the_publisher() -> None:
    class Broken:
        def event(self, bus: int, event: Event) -> None:
            raise RuntimeError("observer bug")

        def closed(self, bus: int) -> None:
            raise RuntimeError("observer bug")

    async with open_event_bus(observer=Broken()) as bus:
        subscription = bus.subscribe()
        bus.publish(numbered(1))
        assert await subscription.receive() == numbered(1)


async def test_a_closed_subscription_does_not_disturb_the_others() -> None:
    async with open_event_bus(capacity=4) as bus:
        gone = bus.subscribe()
        kept = bus.subscribe()
        gone.close()
        for n in range(3):
            bus.publish(numbered(n))
            await trio.lowlevel.checkpoint()
        assert await kept.receive() == numbered(0)


@settings(max_examples=60, deadline=None)
@given(
    capacity=st.integers(1, 8),
    before=st.integers(0, 5),
    steps=st.lists(st.one_of(st.integers(1, 20), st.just(0)), max_size=30),
)
def test_any_interleaving_keeps_order_and_accounts_for_every_event(
    capacity: int, before: int, steps: list[int]
) -> None:
    """Positive steps publish that many events; 0 lets the subscriber receive what is queued."""

    async def scenario() -> None:
        observer = RecordingObserver()
        received: list[int] = []
        lagged = 0

        def take(items: list[Event | Lagged]) -> None:
            nonlocal lagged
            for item in items:
                if isinstance(item, Lagged):
                    lagged += item.n
                else:
                    assert isinstance(item, ItemDone)
                    received.append(int(item.id))

        count = 0
        async with open_event_bus(capacity=capacity, observer=observer) as bus:
            for _ in range(before):
                bus.publish(numbered(count))
                count += 1
            first_after = count
            subscription = bus.subscribe()
            for step in steps:
                for _ in range(step):
                    bus.publish(numbered(count))
                    count += 1
                await trio.lowlevel.checkpoint()
                if step == 0:
                    take(subscription.receive_nowait())
        take(await drain(subscription))
        assert received == sorted(received)
        assert all(n >= first_after for n in received)
        assert lagged + len(received) == count - first_after
        assert [int(e.id) for _, e in observer.events if isinstance(e, ItemDone)] == list(
            range(count)
        )

    trio.run(scenario)


async def test_stage_finished_carries_frozen_stats() -> None:
    stats = StageStats(done=1)
    event = StageFinished(Stage.SPLIT, stats)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        event.stats.done = 2  # type: ignore[misc]


class _Failing:
    """An observer whose every call fails."""

    def event(self, bus: int, event: Event) -> None:
        raise RuntimeError("broken observer")

    def closed(self, bus: int) -> None:
        raise RuntimeError("broken observer")


class _Kept:
    """An observer that keeps what it is told."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, Event | None]] = []

    def event(self, bus: int, event: Event) -> None:
        self.seen.append((bus, event))

    def closed(self, bus: int) -> None:
        self.seen.append((bus, None))


def test_observers_skip_none_and_contain_a_failing_one(caplog: pytest.LogCaptureFixture) -> None:
    kept = _Kept()
    observers = Observers(None, _Failing(), kept)
    started = StageStarted(Stage.ANSWERS, 3)
    observers.event(7, started)
    observers.closed(7)
    assert kept.seen == [(7, started), (7, None)]
    failures = [r for r in caplog.records if r.getMessage() == "an event observer failed"]
    assert len(failures) == 2


class _Steps(trio.abc.Instrument):
    """Counts the scheduler steps of one task."""

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task = task
        self.steps = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task is self.task:
            self.steps += 1


async def test_delivered_returns_once_the_fan_out_has_filled_the_buffers() -> None:
    # What this can tell apart is a delivered() that returns before the fan-out ran (the
    # buffer would be empty) or spins for many scheduler passes; a poll that happens to catch
    # the fan-out on its first pass looks the same as the event it now waits on.
    with trio.fail_after(5):
        async with open_event_bus(capacity=8) as bus:
            sub = bus.subscribe()
            await bus.delivered()  # nothing pending: at once
            steps = _Steps(trio.lowlevel.current_task())
            trio.lowlevel.add_instrument(steps)
            try:
                for n in range(3):
                    bus.publish(StageStarted(Stage.ANSWERS, n))
                await bus.delivered()
            finally:
                trio.lowlevel.remove_instrument(steps)
            assert sub.receive_nowait() == [StageStarted(Stage.ANSWERS, n) for n in range(3)]
            # Woken by the fan-out, not rescheduled pass after pass meanwhile.
            assert steps.steps <= 2
