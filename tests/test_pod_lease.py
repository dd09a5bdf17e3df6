"""The pace behind the overrun note, and the lease clocks' test hook (§7.6)."""

from __future__ import annotations

from overbrainer.model.train_metric import TrainMetric
from overbrainer.targets.runpod.lease import LeaseTimes, Pace


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
