"""`Push` progress: at most one event a second, only when the count moved, capped at the total."""

from __future__ import annotations

import itertools

import trio
import trio.testing

from overbrainer.events.bus import open_event_bus
from overbrainer.events.types import Event, Push
from overbrainer.hub.commit import publish_progress


class Seen:
    """An observer keeping each Push event with the (virtual) time it came."""

    def __init__(self) -> None:
        self.pushes: list[tuple[float, Push]] = []

    def event(self, bus: int, event: Event) -> None:
        if isinstance(event, Push):
            self.pushes.append((trio.current_time(), event))

    def closed(self, bus: int) -> None:
        pass


async def test_progress_is_at_most_once_a_second(autojump_clock: trio.testing.MockClock) -> None:
    seen = Seen()
    done = [0]

    async def reader() -> None:
        for _ in range(100):  # the library reads 1 kB every 50 ms, past the total at the end
            done[0] += 1000
            await trio.sleep(0.05)

    with trio.fail_after(60):
        async with open_event_bus(observer=seen) as bus, trio.open_nursery() as nursery:
            nursery.start_soon(publish_progress, bus, "run", 90_000, lambda: done[0])
            await reader()
            await trio.sleep(3)  # nothing moves: no event
            nursery.cancel_scope.cancel()
    times = [when for when, _ in seen.pushes]
    assert all(later - earlier >= 1 for earlier, later in itertools.pairwise(times))
    values = [push.done for _, push in seen.pushes]
    assert values[0] <= 1000
    assert values[-1] == 90_000
    assert values == sorted(set(values))
    assert all(push.total == 90_000 and push.run_id == "run" for _, push in seen.pushes)
