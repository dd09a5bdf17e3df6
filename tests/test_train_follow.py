"""The follow loop (§6.2, §E.4), the stop fallbacks (§6.4) and line tailing (§4.6), on fake jobs."""

from __future__ import annotations

import itertools
import logging
import math
import re
import threading
import time
from pathlib import Path

import attrs
import pytest
import trio
import trio.testing

from overbrainer.events.bus import open_event_bus
from overbrainer.events.types import Event, JobStatusChanged, MarkEvent, Metric, RunWatched, System
from overbrainer.model.job_status import Cancelled, Exited, JobStatus, Lost, Running
from overbrainer.model.system_sample import SystemSample
from overbrainer.model.train_metric import EndMark, JobStage, StageMark
from overbrainer.system import sampler as sampler_module
from overbrainer.system.sampler import LocalSampler
from overbrainer.targets.executor import READ_LIMIT
from overbrainer.targets.local import split_lines
from overbrainer.targets.machine import Sampler
from overbrainer.training.follow_job import (
    FollowError,
    FollowTimes,
    MetricsTail,
    follow,
    guard_stop,
)
from overbrainer.training.summary import MetricsSummary

STAGE = b'{"event":"stage","name":"train","time":1}\n'
BEGIN = b'{"event":"begin","time":1.0,"max_steps":4}\n'


def log_line(step: int, **extra: float) -> bytes:
    fields = "".join(f',"{k}":{v}' for k, v in extra.items())
    return b'{"event":"log","time":%d.0,"step":%d,"max_steps":4%s}\n' % (
        step,
        step,
        fields.encode(),
    )


@attrs.define
class Collected:
    events: list[Event] = attrs.Factory(list)

    def event(self, bus: int, event: Event) -> None:
        self.events.append(event)

    def closed(self, bus: int) -> None:
        pass


@attrs.define
class FakeJob:
    """A job whose files and status answers the test scripts; errors are raised when listed."""

    files: dict[str, bytes] = attrs.Factory(dict)
    statuses: list[JobStatus | OSError] = attrs.Factory(lambda: [Running()])
    reads_fail: int = 0
    cancels: int = 0
    status_calls: int = 0
    down: tuple[tuple[float, float], ...] = ()
    """Outages: every read fails from the first time to the second, on the trio clock."""
    attempts: list[float] = attrs.Factory(list)
    """When each read during an outage was made."""

    async def read_from(self, name: str, offset: int, limit: int) -> bytes:
        await trio.lowlevel.checkpoint()
        if any(start <= trio.current_time() < end for start, end in self.down):
            self.attempts.append(trio.current_time())
            raise OSError("cannot reach target `box`: Connection refused")
        if self.reads_fail:
            self.reads_fail -= 1
            raise OSError("connection reset")
        return self.files.get(name, b"")[offset : offset + limit]

    async def status(self) -> JobStatus:
        await trio.lowlevel.checkpoint()
        self.status_calls += 1
        item = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        if isinstance(item, OSError):
            raise item
        return item

    async def exists(self, name: str) -> bool:
        await trio.lowlevel.checkpoint()
        return name in self.files

    async def cancel(self) -> None:
        await trio.lowlevel.checkpoint()
        self.cancels += 1
        self.statuses = [Cancelled()]


@attrs.define
class CountingSampler:
    times: list[float] = attrs.Factory(list)

    async def sample(self) -> SystemSample:
        self.times.append(trio.current_time())
        await trio.lowlevel.checkpoint()
        return SystemSample(at=0.0, disks=(), cpu=None, memory=None, gpus=())


async def run_follow(
    job: FakeJob, sampler: Sampler | None = None, times: FollowTimes | None = None
) -> tuple[JobStatus, list[Event], MetricsSummary]:
    seen = Collected()
    tail = MetricsTail(MetricsSummary())
    status: JobStatus | FollowError
    async with open_event_bus(observer=seen) as bus:
        try:
            status = await follow(
                job, bus, tail, run_id="r1", times=times or FollowTimes(), sampler=sampler
            )
        except FollowError as error:
            status = error
    if isinstance(status, FollowError):
        raise status
    return status, seen.events, tail.summary


async def test_follow_publishes_lines_then_status_changes_only(
    autojump_clock: trio.testing.MockClock,
) -> None:
    job = FakeJob(
        files={"metrics.jsonl": STAGE + BEGIN + log_line(1, loss=2.0)},
        statuses=[Running(), Running(), Exited(0)],
    )
    status, events, summary = await run_follow(job)
    assert status == Exited(0)
    assert events[0] == RunWatched("r1")
    assert events[1] == MarkEvent(StageMark(JobStage.TRAIN))
    assert isinstance(events[2], Metric) and events[2].metric.loss == 2.0
    assert [e for e in events if isinstance(e, JobStatusChanged)] == [
        JobStatusChanged(Running()),
        JobStatusChanged(Exited(0)),
    ]
    assert summary.lines == 2 and summary.begun
    assert job.status_calls == 3


async def test_follow_drains_the_file_after_the_end(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # More than one read's worth of lines is left when the job ends: all of them are read.
    many = b"".join(log_line(2, loss=1.0) for _ in range(READ_LIMIT // 40 + 10))
    job = FakeJob(files={"metrics.jsonl": many + b'{"event":"end","time":9.0,"step":4}\n'})
    job.statuses = [Exited(0)]
    _, events, summary = await run_follow(job)
    assert summary.lines == many.count(b"\n") + 1
    assert events[-1] == MarkEvent(EndMark(4))


async def test_an_outage_shorter_than_the_budget_is_ridden_out_with_a_growing_wait(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    start = trio.current_time()
    statuses: list[JobStatus | OSError] = [Running(), Running(), Running(), Exited(0)]
    job = FakeJob(statuses=statuses, down=((start, start + 4 * 60 + 20),))
    with caplog.at_level(logging.DEBUG, logger="overbrainer.training.follow_job"):
        status, _, _ = await run_follow(job)
    assert status == Exited(0)
    waits = [later - earlier for earlier, later in itertools.pairwise(job.attempts)]
    # 1 s doubling to a 30 s cap, each shortened by up to a quarter (jitter).
    for wait, full in zip(waits, [1, 2, 4, 8, 16, 30, 30, 30], strict=False):
        assert 0.75 * full <= wait <= full
    assert max(waits) <= 30
    said = [(r.levelname, r.getMessage()) for r in caplog.records if r.levelno >= logging.INFO]
    assert said[0] == (
        "INFO",
        "cannot reach the job of run r1 (trying again for up to 5 min): "
        "cannot reach target `box`: Connection refused",
    )
    assert said[1][0] == "INFO"
    again = re.fullmatch(r"reached the job of run r1 again after 4 min (\d+) s", said[1][1])
    assert again is not None, said[1][1]
    # Reached within one capped wait (30 s) of the outage's end (4 min 20 s); the polls
    # after that, until the job's exit, are the normal 2 s ones and not counted here.
    assert 20 <= int(again[1]) <= 50
    assert len(said) == 2  # nothing at WARN: the SSH client says the connection was lost


async def test_the_budget_spent_gives_up_with_the_attach_hint(
    autojump_clock: trio.testing.MockClock,
) -> None:
    start = trio.current_time()
    with pytest.raises(FollowError) as caught:
        await run_follow(FakeJob(down=((start, math.inf),)))
    assert 300 <= trio.current_time() - start < 301
    assert caught.value.message == (
        "cannot reach the job of run r1 for 5 min: cannot reach target `box`: Connection "
        "refused; follow it again with `overbrainer train attach r1`"
    )
    start = trio.current_time()
    with pytest.raises(FollowError) as caught:
        await run_follow(FakeJob(down=((start, math.inf),)), times=FollowTimes(reconnect=3.0))
    assert 3 <= trio.current_time() - start < 3.5
    assert caught.value.message.startswith("cannot reach the job of run r1 for 3 s: ")


async def test_each_outage_gets_the_whole_budget_and_the_drain_has_it_too(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Two outages of 4 min, a minute of answers between them: neither spends the 5 min budget.
    start = trio.current_time()
    statuses: list[JobStatus | OSError] = [*[Running()] * 200, Exited(0)]
    job = FakeJob(statuses=statuses, down=((start, start + 240), (start + 300, start + 540)))
    with caplog.at_level(logging.INFO, logger="overbrainer.training.follow_job"):
        status, _, _ = await run_follow(job)
    assert status == Exited(0)
    said = [r.getMessage() for r in caplog.records]
    assert sum(line.startswith("cannot reach the job of run r1 (trying") for line in said) == 2
    # Each outage is 4 min; the follower sees it from its first failed poll (up to one poll
    # interval in) to its first answer after (a jittered retry wait): about 4 min either way.
    found = [
        re.match(r"reached the job of run r1 again after (\d+) min(?: (\d+) s)?", line)
        for line in said
    ]
    seconds = [int(m[1]) * 60 + int(m[2] or 0) for m in found if m is not None]
    assert len(seconds) == 2 and all(230 <= spent <= 270 for spent in seconds), said
    broken = FakeJob(statuses=[Exited(0)], reads_fail=7)  # the drain after the end
    status, _, _ = await run_follow(broken)
    assert status == Exited(0)


async def test_follow_samples_the_machine_every_10_s(
    autojump_clock: trio.testing.MockClock,
) -> None:
    running: list[JobStatus | OSError] = [Running()] * 16
    job = FakeJob(statuses=[*running, Lost()])  # 16 polls of 2 s: 32 s
    sampler = CountingSampler()
    start = trio.current_time()
    status, events, _ = await run_follow(job, sampler)
    assert status == Lost()
    assert [round(t - start) for t in sampler.times] == [0, 10, 20, 30]
    assert sum(isinstance(e, System) for e in events) == 4


def times() -> FollowTimes:
    return FollowTimes()


async def test_no_snapshot_30_min_after_the_request_cancels(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    job = FakeJob()
    start = trio.current_time()
    with caplog.at_level(logging.WARNING):
        await guard_stop(job, times=times(), requested=True)
    assert job.cancels == 1
    assert 1800 <= trio.current_time() - start < 1803
    assert caplog.records[-1].getMessage() == (
        "no snapshot 30 min after it was asked for: the job was cancelled"
    )


async def test_a_snapshot_without_an_end_is_cancelled_10_min_later(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    job = FakeJob()
    start = trio.current_time()

    async def prove_later() -> None:
        await trio.sleep(60)
        job.files["snapshot.json"] = b"{}"

    with caplog.at_level(logging.WARNING):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(prove_later)
            await guard_stop(job, times=times(), requested=True)
    assert job.cancels == 1
    assert 660 <= trio.current_time() - start < 663
    assert caplog.records[-1].getMessage() == (
        "the job saved its snapshot but did not end: it was cancelled"
    )


async def test_a_follower_that_did_not_ask_sees_the_request_within_30_s(
    autojump_clock: trio.testing.MockClock,
) -> None:
    job = FakeJob()
    start = trio.current_time()

    async def request_later() -> None:
        await trio.sleep(45)
        job.files["snapshot.request"] = b"requested"

    async with trio.open_nursery() as nursery:
        nursery.start_soon(request_later)
        await guard_stop(job, times=times(), requested=False)
    # Seen at the 60 s look, then 30 min without a proof.
    assert trio.current_time() - start == pytest.approx(60 + 1800, abs=3)
    assert job.cancels == 1


async def test_a_job_that_ends_in_time_is_left_alone(
    autojump_clock: trio.testing.MockClock,
) -> None:
    job = FakeJob(files={"snapshot.json": b"{}"}, statuses=[Exited(0)])
    await guard_stop(job, times=times(), requested=True)
    assert job.cancels == 0


def test_times_come_from_the_test_hooks() -> None:
    env = {"OVERBRAINER_TEST_POLL_S": "0.05", "OVERBRAINER_TEST_STOP_LIMITS_S": "3,1"}
    assert FollowTimes.from_env(env) == FollowTimes(
        poll=0.05, request_watch=0.05, no_proof=3.0, after_proof=1.0
    )
    assert FollowTimes.from_env({"OVERBRAINER_TEST_POLL_S": "nan"}) == FollowTimes()


def test_lines_split_on_newline_or_return_and_drop_empty_ones() -> None:
    assert split_lines(b"a\r\nb\rc\n\n") == (["a", "b", "c"], 8)
    assert split_lines(b"a\npartial") == (["a"], 2)
    assert split_lines(b"partial") == ([], 0)


def test_a_full_read_without_a_terminator_is_one_line_cut_at_a_character() -> None:
    data = b"x" * 7 + "é".encode()  # 9 bytes; a read of 8 cuts the two-byte character
    assert split_lines(data[:8], limit=8) == (["x" * 7], 7)
    assert split_lines(data[:9], limit=9) == (["x" * 7 + "é"], 9)


def test_metric_lines_fast_and_slow_shapes_parse_alike() -> None:
    from overbrainer.model.train_metric import TrainMetric
    from overbrainer.training.metric_lines import Log, MetricLineError, parse_line

    fast = parse_line(
        '{"event":"log","time":1.5,"step":3,"epoch":0.5,"max_steps":9,"loss":2.0,'
        '"learning_rate":0.0002,"grad_norm":0.5,"extra":"ignored"}'
    )
    assert fast == Log(TrainMetric(1.5, 3, 0.5, 9, 2.0, None, 0.0002, 0.5))
    slow = parse_line('{"event":"log","time":1,"step":3,"epoch":1,"loss":NaN,"grad_norm":null}')
    assert slow == Log(TrainMetric(1.0, 3, 1.0, None, None, None, None, None))
    for bad, why in [
        ('{"event":"log","time":1.0,"step":true}', "field `step` is not a non-negative integer"),
        ('{"event":"log","time":1.0,"step":-1}', "field `step` is not a non-negative integer"),
        ('{"event":"log","step":1}', "missing field `time`"),
        ('{"event":"log","time":1.0,"step":1,"loss":"x"}', "field `loss` is not a number"),
        (
            '{"event":"log","time":1.0,"step":1,"max_steps":1.5}',
            "field `max_steps` is not a non-negative integer",
        ),
        ('{"event":"later","time":1.0}', "unknown event `later`"),
    ]:
        with pytest.raises(MetricLineError) as caught:
            parse_line(bad)
        assert str(caught.value) == why


class BrokenSampler:
    """A sampler whose probe always fails, as a broken NVML or psutil would."""

    async def sample(self) -> SystemSample:
        await trio.lowlevel.checkpoint()
        raise LookupError("no such device")


async def test_a_failing_sample_is_logged_at_debug_and_never_ends_the_follow(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    running: list[JobStatus | OSError] = [Running()] * 9  # ends at 18 s: samples at 0 and 10 s
    job = FakeJob(statuses=[*running, Exited(0)])
    with caplog.at_level(logging.DEBUG, logger="overbrainer.training.follow_job"):
        seen = Collected()
        async with open_event_bus(observer=seen) as bus:
            status = await follow(
                job,
                bus,
                MetricsTail(MetricsSummary()),
                run_id="r1",
                times=FollowTimes(),
                sampler=BrokenSampler(),
            )
    assert status == Exited(0)
    failures = [r for r in caplog.records if r.getMessage().startswith("cannot sample")]
    assert [r.getMessage() for r in failures] == ["cannot sample the target: no such device"] * 2
    assert all(r.levelno == logging.DEBUG for r in failures)


@attrs.define
class LoggingJob(FakeJob):
    """A running job that logs one metric line per status poll, noting the shared threads in use."""

    step: int = 0
    borrowed: list[int] = attrs.Factory(list)

    async def status(self) -> JobStatus:
        self.step += 1
        line = b'{"event":"log","time":%d.0,"step":%d,"loss":1.5}\n' % (self.step, self.step)
        self.files["metrics.jsonl"] = self.files.get("metrics.jsonl", b"") + line
        self.borrowed.append(trio.to_thread.current_default_thread_limiter().borrowed_tokens)
        # As the local job does: a status read in a thread, which needs a free shared slot.
        await trio.to_thread.run_sync(lambda: None)
        return await super().status()


async def test_a_hung_sample_read_never_stops_the_follow_nor_starves_the_threads(
    autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    release = threading.Event()
    reads: list[float] = []

    def hung_read(directory: Path, *_: object, **__: object) -> SystemSample:
        reads.append(time.monotonic())
        release.wait(60)  # a read stuck on a hung mount until the test lets it go
        return SystemSample(at=0.0, disks=(), cpu=None, memory=None, gpus=())

    monkeypatch.setattr(sampler_module, "sample_machine", hung_read)
    # Jump only after 10 ms of real idleness: with 0, every wait on a real thread (each poll
    # reads through one) let the clock leap to the sampler's next deadline, so the sampler
    # spun through half a million virtual periods, took 50-90 s and outlived the hung read.
    autojump_clock.autojump_threshold = 0.01
    sampler = LocalSampler(tmp_path, nvml=None)
    polls = 500  # 1,000 s of following: 100 sample periods, 50 abandoned samples' worth
    job = LoggingJob(files={"metrics.jsonl": STAGE}, statuses=[*[Running()] * polls, Exited(0)])
    try:
        with caplog.at_level(logging.DEBUG, logger="overbrainer.system.sampler"):
            status, events, summary = await run_follow(job, sampler)
        assert status == Exited(0)
        # Every line the job wrote was followed, and both status changes came through.
        assert job.step == polls + 1
        assert sum(isinstance(e, Metric) for e in events) == summary.lines == job.step
        assert [e for e in events if isinstance(e, JobStatusChanged)] == [
            JobStatusChanged(Running()),
            JobStatusChanged(Exited(0)),
        ]
        # One thread was stuck; no sample was taken again while it was.
        assert len(reads) == 1 and sampler.stuck
        assert not any(isinstance(e, System) for e in events)
        # The stuck read holds the sampler's own slot, never one of the shared limiter's.
        assert max(job.borrowed) == 0
        assert trio.to_thread.current_default_thread_limiter().borrowed_tokens == 0
        logged = [r for r in caplog.records if r.name == "overbrainer.system.sampler"]
        assert [r.levelno for r in logged if r.levelno >= logging.WARNING] == [logging.WARNING]
        assert "stuck" in logged[0].getMessage()
        assert sum(r.levelno == logging.DEBUG for r in logged) >= 90
    finally:
        release.set()
    # Once the read returns, its slot is free and the sampler samples again. The clock runs at
    # real speed from here: waiting on a real thread, an autojumping clock would leap past any
    # deadline before the thread had run.
    autojump_clock.autojump_threshold = math.inf
    autojump_clock.rate = 1.0
    with trio.fail_after(30):
        await trio.testing.wait_all_threads_completed()
        while sampler.stuck:  # noqa: ASYNC110 - the slot is freed by a callback, no event
            await trio.sleep(0.01)
        assert await sampler.sample() is not None
