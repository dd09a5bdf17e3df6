"""Event bus figures: publish cost, lossless delivery rate, and a bare Trio channel as the floor."""

from __future__ import annotations

import statistics
import time

import trio
import trio.lowlevel

from overbrainer.events.bus import Lagged, Subscription, open_event_bus
from overbrainer.events.types import Event, ItemDone, Stage

EVENTS = 100_000


class CountingObserver:
    """Counts events, as a cheap stand-in for the metrics observer."""

    def __init__(self) -> None:
        self.count = 0

    def event(self, bus: int, event: Event) -> None:
        self.count += 1

    def closed(self, bus: int) -> None:
        pass


async def publish_cost() -> float:
    """Median µs of one publish, with one subscriber and an observer, in batches of 1000."""
    samples: list[float] = []
    event = ItemDone(Stage.ANSWERS, "q")
    async with open_event_bus(observer=CountingObserver()) as bus:
        subscription = bus.subscribe()
        for _ in range(200):
            started = time.perf_counter()
            for _ in range(1000):
                bus.publish(event)
            samples.append((time.perf_counter() - started) / 1000 * 1e6)
            await trio.lowlevel.checkpoint()
            subscription.receive_nowait()
    return statistics.median(samples)


async def lossless_rate(subscribers: int) -> tuple[float, int]:
    """Events/s delivered to every subscriber when the publisher yields once per event."""
    observer = CountingObserver()
    lost = 0
    received = [0] * subscribers

    async def consume(index: int, subscription: Subscription) -> None:
        nonlocal lost
        while True:
            try:
                items = await subscription.receive_batch()
            except trio.EndOfChannel:
                return
            for item in items:
                if isinstance(item, Lagged):
                    lost += item.n
                else:
                    received[index] += 1

    started = time.perf_counter()
    async with trio.open_nursery() as nursery, open_event_bus(observer=observer) as bus:
        for index in range(subscribers):
            nursery.start_soon(consume, index, bus.subscribe())
        event = ItemDone(Stage.ANSWERS, "q")
        for _ in range(EVENTS):
            bus.publish(event)
            await trio.lowlevel.checkpoint()
    elapsed = time.perf_counter() - started
    assert observer.count == EVENTS
    assert all(count + lost // subscribers <= EVENTS for count in received)
    return EVENTS / elapsed, lost


async def bare_channel_rate() -> float:
    """Events/s through one memory channel: send_nowait, then one receive per event."""
    send, receive = trio.open_memory_channel[Event](1024)
    event = ItemDone(Stage.ANSWERS, "q")

    async def consume() -> None:
        async for _ in receive:
            pass

    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        async with send:
            for _ in range(EVENTS):
                send.send_nowait(event)
                await trio.lowlevel.checkpoint()
    return EVENTS / (time.perf_counter() - started)


async def main() -> None:
    """Print every figure."""
    cost = await publish_cost()
    one, lost_one = await lossless_rate(1)
    four, lost_four = await lossless_rate(4)
    bare = await bare_channel_rate()
    print(f"publish: {cost:.2f} us median per event (target <= 2)")
    print(f"lossless to 1 subscriber + observer: {one:,.0f} events/s, lost {lost_one}")
    print(f"lossless to 4 subscribers + observer: {four:,.0f} events/s, lost {lost_four}")
    print(f"bare memory channel: {bare:,.0f} events/s")
    print(f"bus to 1 subscriber / bare channel: {one / bare:.2f} (target >= 0.4)")


if __name__ == "__main__":
    trio.run(main)
