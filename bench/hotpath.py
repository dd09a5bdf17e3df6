"""Per-answer pieces of the `answers` hot path, in CPU microseconds (best of 5).

- the spend cap's reservation and settlement, 64 requests in flight (no cap set, as most runs);
- the CLI's progress lines per `ItemDone`, beyond a bus with neither, one event per scheduler
  pass (replies spread over time, as in a real run); as a bus observer (`ProgressLines`, what
  the CLI uses) or, with `--subscriber`, as the subscriber it was before (`render`, from a
  tree that still has it: `PYTHONPATH=<old tree> python bench/hotpath.py --subscriber`);
- the stage's stats per answer (`add_usage`, then one more done).

Run: `python bench/hotpath.py [--subscriber]`. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
import timeit
from collections.abc import Awaitable, Callable

import attrs
import trio
import trio.lowlevel

from overbrainer.events.bus import EventBus, open_event_bus
from overbrainer.events.types import ItemDone, Stage, StageStarted, StageStats
from overbrainer.model.usage import Usage
from overbrainer.pipeline.money import Money
from overbrainer.pipeline.spend import SpendCap
from overbrainer.ui import progress

REQUESTS = 20_000
AT_ONCE = 64


def cpu_of(flow: Callable[[], Awaitable[None]]) -> float:
    """CPU seconds of one `trio.run(flow)`."""
    begun = time.process_time()
    trio.run(flow)
    return time.process_time() - begun


def spend_us() -> float:
    """Reservation and settlement per request, beyond the same tasks without them."""
    each = REQUESTS // AT_ONCE

    async def reserving() -> None:
        cap = SpendCap(None)

        async def worker() -> None:
            for _ in range(each):
                reservation = await cap.reserve(Money(10**27))
                assert reservation is not None
                await trio.lowlevel.checkpoint()  # the request
                reservation.settle(Money(5 * 10**26))

        async with trio.open_nursery() as nursery:
            for _ in range(AT_ONCE):
                nursery.start_soon(worker)

    async def bare() -> None:
        async def worker() -> None:
            for _ in range(each):
                await trio.lowlevel.checkpoint()

        async with trio.open_nursery() as nursery:
            for _ in range(AT_ONCE):
                nursery.start_soon(worker)

    return (cpu_of(reserving) - cpu_of(bare)) / (each * AT_ONCE) * 1e6


async def publish_all(bus: EventBus) -> None:
    """`REQUESTS` answers' events, one per scheduler pass."""
    bus.publish(StageStarted(Stage.ANSWERS, REQUESTS))
    for n in range(REQUESTS):
        bus.publish(ItemDone(Stage.ANSWERS, str(n), Usage(10, 60), None))
        await trio.lowlevel.checkpoint()
        await trio.lowlevel.checkpoint()


def progress_us(how: str) -> float:
    """The progress lines' CPU per event, beyond a bus without them."""

    async def neither() -> None:
        async with open_event_bus() as bus:
            await publish_all(bus)

    async def observer() -> None:
        async with open_event_bus(observer=progress.ProgressLines()) as bus:
            await publish_all(bus)

    async def subscriber() -> None:
        render = getattr(progress, "render")  # noqa: B009 (only older trees have it)
        async with trio.open_nursery() as nursery, open_event_bus() as bus:
            nursery.start_soon(render, bus.subscribe())
            await publish_all(bus)

    flow = subscriber if how == "subscriber" else observer
    return (cpu_of(flow) - cpu_of(neither)) / REQUESTS * 1e6


def stats_us() -> float:
    """`add_usage` then one more done, as `StageRun` counts each answer."""
    usage = Usage(10, 60)

    def count() -> None:
        stats = StageStats().add_usage(usage)
        if hasattr(stats, "one_done"):
            stats.one_done()
        else:  # an older tree: what `StageRun.done` did there
            attrs.evolve(stats, done=stats.done + 1)

    return min(timeit.repeat(count, number=REQUESTS, repeat=5)) / REQUESTS * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscriber", action="store_true", help="progress as a subscriber")
    args = parser.parse_args()
    # The lines are formatted as the CLI formats them, and thrown away.
    logging.basicConfig(level=logging.INFO, stream=open(os.devnull, "w"))  # noqa: SIM115
    print(f"load average {os.getloadavg()[0]:.2f}")
    spend = min(spend_us() for _ in range(5))
    print(f"spend reservation + settlement, {AT_ONCE} in flight: {spend:.1f} µs/request")
    how = "subscriber" if args.subscriber else "observer"
    print(f"progress lines ({how}): {min(progress_us(how) for _ in range(5)):.1f} µs/event")
    print(f"stats per answer: {stats_us():.2f} µs")


if __name__ == "__main__":
    main()
