"""The lease and client guard of a followed pod (`max_hours`, §7.6), and the overrun note."""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Mapping
from typing import Protocol

import attrs
import trio

from overbrainer.events.bus import EventBus
from overbrainer.events.types import Metric
from overbrainer.model.errors import OverbrainerError
from overbrainer.model.train_metric import TrainMetric

log = logging.getLogger(__name__)

LEASE_TIMES_ENV = "OVERBRAINER_TEST_LEASE_S"
"""Test hook: `tick,renew,fresh,grace,stale` seconds (see LeaseTimes)."""
DEADLINE_MESSAGE = "max_hours reached: the pod was deleted before the job ended"

Clock = Callable[[], float]
"""Seconds since the epoch (`time.time`; tests give one on Trio's virtual clock)."""


class LeaseFile(Protocol):
    """Where the lease is renewed: the pod's executor."""

    async def put_file(self, path: str, content: str) -> None:
        """Write `content` to `path` on the target, atomically."""


@attrs.frozen
class LeaseTimes:
    """The lease's clocks, in seconds (tests shorten them through LEASE_TIMES_ENV)."""

    tick: float = 60.0
    renew: float = 300.0
    """The lease is renewed at most this often..."""
    fresh: float = 1800.0
    """...and only while a metric arrived within this long (a stuck job lets it lapse)."""
    grace: float = 300.0
    """The client guard acts this long after the deadline at the earliest..."""
    stale: float = 900.0
    """...and only once no lease was renewed within this long."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LeaseTimes:
        """The defaults, or the test hook's five values when set and valid."""
        text = (os.environ if environ is None else environ).get(LEASE_TIMES_ENV, "")
        try:
            values = [float(part) for part in text.split(",")]
        except ValueError:
            return cls()
        if len(values) != 5 or not all(math.isfinite(v) and v > 0 for v in values):
            return cls()
        return cls(*values)


@attrs.define
class Pace:
    """When the last metric arrived, and the job's pace since the first one seen."""

    clock: Clock = time.time
    last_arrival: float = attrs.field(
        default=attrs.Factory(lambda self: self.clock(), takes_self=True)
    )
    first: TrainMetric | None = None
    latest: TrainMetric | None = None

    def seen(self, metric: TrainMetric) -> None:
        """Note a training metric line."""
        self.last_arrival = self.clock()
        if self.first is None:
            self.first = metric
        self.latest = metric

    def seconds_left(self) -> float | None:
        """How long the job needs at its pace so far, None when it cannot be told yet."""
        first, latest = self.first, self.latest
        if first is None or latest is None or latest.max_steps is None:
            return None
        steps, seconds = latest.step - first.step, latest.time - first.time
        if steps <= 0 or seconds <= 0:
            return None
        return max(0, latest.max_steps - latest.step) * seconds / steps


async def watch_pace(bus: EventBus, pace: Pace, deadline: int | None, deadline_text: str) -> None:
    """Track the job's metrics; warn once when at its pace it ends past `max_hours`."""
    noted = False
    subscription = bus.subscribe()
    try:
        async for event in subscription:
            if not isinstance(event, Metric) or event.metric.eval_loss is not None:
                continue
            pace.seen(event.metric)
            left = pace.seconds_left()
            if noted or deadline is None or left is None or pace.clock() + left <= deadline:
                continue
            noted = True
            tenths = max(1, math.ceil(left / 360))  # hours, tenths rounded up
            log.warning(
                "at this pace the job needs about %d.%dh more, past max_hours (%s): the pod "
                "stays while overbrainer follows the job; if it stops following, the pod's "
                "watchdog deletes the pod",
                tenths // 10,
                tenths % 10,
                deadline_text,
            )
    finally:
        subscription.close()


async def keep_lease(
    executor: LeaseFile,
    remote_dir: str,
    pace: Pace,
    deadline: int | None,
    passed: trio.Event,
    times: LeaseTimes,
) -> None:
    """Renew `.pod/lease` while metrics come; set `passed` once the deadline is 5 min past
    and no lease was renewed within 15 min (the caller deletes the pod). Time is `pace`'s
    clock."""
    renewed = -math.inf
    while True:
        now = pace.clock()
        if now - renewed >= times.renew and now - pace.last_arrival <= times.fresh:
            try:
                await executor.put_file(f"{remote_dir}/.pod/lease", "")
                renewed = now
            except (OverbrainerError, OSError) as error:
                log.debug("pod: cannot renew the lease: %s", error)
        if deadline is not None and now > deadline + times.grace and now - renewed > times.stale:
            passed.set()
            return
        await trio.sleep(times.tick)
