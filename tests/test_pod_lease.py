"""The pace behind the overrun note, the lease and the client guard of `max_hours` on a
virtual clock, and the lease clocks' test hook (§7.6)."""

from __future__ import annotations

import attrs
import pytest
import trio
import trio.testing

from overbrainer.events.bus import open_event_bus
from overbrainer.events.types import Metric
from overbrainer.model.train_metric import TrainMetric
from overbrainer.targets.runpod.lease import LeaseTimes, Pace, keep_lease, watch_pace


def test_the_pace_tells_how_long_the_job_needs() -> None:
    pace = Pace()
    assert pace.seconds_left() is None
    pace.seen(TrainMetric(1000.0, 10, max_steps=1000))
    assert pace.seconds_left() is None  # one line: no pace yet
    pace.seen(TrainMetric(1100.0, 20, max_steps=1000))
    assert pace.seconds_left() == 980 * 10.0
    pace.seen(TrainMetric(1200.0, 30))
    assert pace.seconds_left() is None  # no max_steps on the latest line


def test_lease_times_from_the_hook() -> None:
    assert LeaseTimes.from_env({}) == LeaseTimes(60.0, 300.0, 1800.0, 300.0, 900.0)
    hooked = LeaseTimes.from_env({"OVERBRAINER_TEST_LEASE_S": "0.1,0.2,1,0.5,1.5"})
    assert hooked == LeaseTimes(0.1, 0.2, 1.0, 0.5, 1.5)
    assert LeaseTimes.from_env({"OVERBRAINER_TEST_LEASE_S": "1,2,3"}) == LeaseTimes()
    assert LeaseTimes.from_env({"OVERBRAINER_TEST_LEASE_S": "1,2,3,4,-5"}) == LeaseTimes()


EPOCH = 1_800_000_000.0
"""The wall clock's reading when the test's virtual clock reads 0."""
HOUR = 3600.0
DEADLINE = 2 * HOUR
"""`max_hours = 2`, in seconds after the pod's start."""


def wall_clock() -> float:
    """Seconds since the epoch, on Trio's (virtual) clock."""
    return EPOCH + trio.current_time()


@attrs.define
class LeaseWrites:
    """The pod's lease file: when it was renewed."""

    at: list[float] = attrs.Factory(list)

    async def put_file(self, path: str, content: str) -> None:
        assert (path, content) == ("/w/.pod/lease", "")
        self.at.append(trio.current_time())


async def guard_a_job(metrics_until: float) -> tuple[LeaseWrites, float]:
    """The client guard of a job that logs a metric a minute until `metrics_until`, then
    hangs: the lease's renewals and when the guard found the deadline passed."""
    writes, passed, pace = LeaseWrites(), trio.Event(), Pace(wall_clock)
    async with trio.open_nursery() as nursery:
        deadline = int(EPOCH + DEADLINE)
        nursery.start_soon(keep_lease, writes, "/w", pace, deadline, passed, LeaseTimes())
        step = 0
        while trio.current_time() < metrics_until:
            step += 1
            pace.seen(TrainMetric(wall_clock(), step, max_steps=10_000))
            await trio.sleep(60)
        await passed.wait()
        passed_at = trio.current_time()
        nursery.cancel_scope.cancel()
    return writes, passed_at


async def test_the_guard_keeps_a_job_training_past_max_hours_until_its_metrics_stop(
    autojump_clock: trio.testing.MockClock,
) -> None:
    writes, passed_at = await guard_a_job(metrics_until=3 * HOUR)
    last_metric = 3 * HOUR - 60
    # Renewed every 5 min while a metric came within 30 min, past the deadline too...
    assert writes.at == [300.0 * n for n in range(len(writes.at))]
    assert writes.at[-1] == 12300 <= last_metric + 1800 < writes.at[-1] + 300
    # ...then the first look 15 min after the last renewal finds the lease stale.
    assert passed_at == 13260 == writes.at[-1] + 900 + 60


async def test_the_guard_acts_at_max_hours_plus_its_grace_on_a_job_stuck_before_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    writes, passed_at = await guard_a_job(metrics_until=HOUR)
    assert writes.at[-1] == 5100  # 30 min after the last metric (3540 s), on the 5 min grid
    # Stale long before: the deadline plus its 5 min grace is what it waits for.
    assert passed_at == DEADLINE + 300 + 60


async def test_the_overrun_note_comes_once_when_the_pace_ends_past_max_hours(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    pace = Pace(wall_clock)
    async with open_event_bus() as bus, trio.open_nursery() as nursery:
        deadline = int(EPOCH + DEADLINE)
        nursery.start_soon(watch_pace, bus, pace, deadline, "2027-01-15T10:00:00Z")
        await trio.testing.wait_all_tasks_blocked()
        # 1000 steps of 10 s: 2.8 h in all, the note once the pace is known (the second line).
        for step in range(1, 5):
            bus.publish(Metric(TrainMetric(wall_clock(), step, max_steps=1000)))
            await trio.sleep(10)
        nursery.cancel_scope.cancel()
    notes = [r.getMessage() for r in caplog.records if r.getMessage().startswith("at this pace")]
    assert notes == [
        "at this pace the job needs about 2.8h more, past max_hours (2027-01-15T10:00:00Z): the "
        "pod stays while overbrainer follows the job; if it stops following, the pod's watchdog "
        "deletes the pod"
    ]
