"""The live bar of a followed training job, rendered from events to a string console."""

from __future__ import annotations

import io
import logging
import re

import pytest
import trio
import trio.testing
from rich.console import Console

from overbrainer.events.types import (
    Event,
    JobStatusChanged,
    MarkEvent,
    Metric,
    PodSpend,
    PodStatusChanged,
    RunWatched,
)
from overbrainer.model.job_kind import JobKind
from overbrainer.model.job_status import Exited, Running
from overbrainer.model.pod_status import PodCreated
from overbrainer.model.train_metric import EndMark, EvalMark, JobStage, StageMark, TrainMetric
from overbrainer.ui.bar import BarScreen
from overbrainer.ui.display import Display
from overbrainer.ui.front import CliFrontend
from overbrainer.ui.pace import RATE_WINDOW
from overbrainer.ui.progress import Progress
from overbrainer.ui.train_bar import TrainTally

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def fake_terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(force_terminal=True, file=out, width=120, color_system=None), out


def frame(tally: TrainTally, now: float) -> str:
    """The tally's two lines as a plain string."""
    console = Console(file=io.StringIO(), width=120, color_system=None)
    with console.capture() as capture:
        console.print(tally.renderable(now))
    return capture.get()


def log_at(time: float, step: int, **figures: float) -> Metric:
    return Metric(TrainMetric(time=time, step=step, max_steps=100, **figures))


def test_steps_epoch_losses_rate_and_eta() -> None:
    tally = TrainTally(started=0.0)
    assert "0 steps  – it/s, ETA –" in frame(tally, 0.0)
    tally.apply(log_at(1000.0, 10, epoch=0.1, loss=1.9), now=5.0)
    tally.apply(log_at(1010.0, 30, epoch=0.3, loss=1.5), now=6.0)
    text = frame(tally, 6.0)
    # 20 steps in 10 s of the job's clock: 2 it/s; 70 left: 35 s.
    assert "30/100 steps, epoch 0.30  2.0 it/s, ETA 35s" in text
    assert "training · loss 1.5000 · eval loss –" in text
    assert "━" in text
    # The ETA counts down on our clock between two polls.
    assert "ETA 31s" in frame(tally, 10.0)
    tally.apply(log_at(1011.0, 30, epoch=0.3, eval_loss=0.25), now=11.0)
    assert "loss 1.5000 · eval loss 0.2500" in frame(tally, 11.0)
    tally.apply(Metric(TrainMetric(time=1012.0, step=31, loss=1.4)), now=12.0)
    assert tally.rate() == pytest.approx(21 / 12)


def test_the_rate_looks_at_a_recent_window_only() -> None:
    tally = TrainTally(started=0.0)
    tally.apply(log_at(0.0, 0, loss=2.0), now=0.0)
    tally.apply(log_at(10.0, 100, loss=2.0), now=1.0)  # a fast start...
    slow = [(10.0 + RATE_WINDOW * n / 4, 100 + 5 * n) for n in range(1, 9)]
    for at, step in slow:
        tally.apply(log_at(at, step, loss=1.0), now=at)
    # ...no longer counts once a window of slower logs followed it.
    assert tally.rate() == pytest.approx(5 / (RATE_WINDOW / 4))
    # A restarted job (its step goes back) starts its pace again.
    tally.apply(log_at(500.0, 3, loss=1.0), now=500.0)
    assert tally.rate() is None


def test_the_phase_follows_evaluation_finalizing_merging_and_retrieving() -> None:
    tally = TrainTally(started=0.0)
    tally.apply(JobStatusChanged(Running()), now=0.0)
    tally.apply(log_at(1.0, 50, loss=1.0), now=1.0)
    tally.apply(MarkEvent(EvalMark(3, 8)), now=2.0)
    assert "evaluating 3/8 · loss 1.0000" in frame(tally, 2.0)
    tally.apply(log_at(2.0, 100, loss=0.9), now=3.0)
    tally.apply(MarkEvent(EndMark(100)), now=3.0)
    assert "finalizing (saving model)" in frame(tally, 3.0)
    tally.apply(MarkEvent(StageMark(JobStage.MERGE)), now=4.0)
    assert "merging adapter" in frame(tally, 4.0)
    tally.apply(JobStatusChanged(Exited(0)), now=14.0)
    text = frame(tally, 20.0)
    assert "retrieving results" in text
    assert "100/100 steps" in text and "took 14s" in text
    tally.last = True
    assert "job exited with code 0 · loss 0.9000" in frame(tally, 20.0)


def test_a_pod_shows_its_rate_and_spend_so_far() -> None:
    tally = TrainTally(started=0.0)
    assert "$" not in frame(tally, 0.0)
    tally.apply(PodSpend("pod0001", 0.44, 0.0293), now=1.0)
    assert "training · loss – · eval loss – · pod $0.44/h, $0.03 so far" in frame(tally, 1.0)
    tally.apply(PodSpend("pod0001", 0.44, 1.3461), now=2.0)
    assert "pod $0.44/h, $1.35 so far" in frame(tally, 2.0)


def test_the_screen_draws_a_training_bar_with_spend_then_leaves_its_last_frame() -> None:
    now = [0.0]
    console, out = fake_terminal()
    screen = BarScreen(console, clock=lambda: now[0])
    events: list[Event] = [
        PodStatusChanged(PodCreated("pod0001", "NVIDIA A40", "US-KS-2", 0.44)),
        RunWatched("r1"),
        PodSpend("pod0001", 0.44, 0.1234),
        JobStatusChanged(Running()),
        log_at(100.0, 40, epoch=0.4, loss=1.25),
        log_at(104.0, 60, epoch=0.6, loss=1.125, eval_loss=0.5),
    ]
    for event in events:
        now[0] += 1.0
        screen.event(1, event)
    screen.tick()
    text = ANSI.sub("", out.getvalue())
    assert "train" in text
    assert "60/100 steps, epoch 0.60  5.0 it/s, ETA 8s" in text
    assert "training · loss 1.1250 · eval loss 0.5000 · pod $0.44/h, $0.12 so far" in text
    screen.event(1, JobStatusChanged(Exited(0)))
    screen.freeze()
    assert screen.live is None
    last = ANSI.sub("", out.getvalue())
    assert "job exited with code 0 · loss 1.1250 · eval loss 0.5000 · pod $0.44/h" in last


def test_an_export_or_compare_job_gets_no_bar() -> None:
    console, out = fake_terminal()
    screen = BarScreen(console)
    screen.event(1, RunWatched("r1", JobKind.EXPORT))
    screen.event(1, MarkEvent(StageMark(JobStage.EXPORT)))
    screen.tick()
    assert screen.tally is None and out.getvalue() == ""


def test_with_a_bar_a_training_job_logs_its_status_but_not_its_metrics_or_phases(
    caplog: pytest.LogCaptureFixture,
) -> None:
    progress = Progress(item_lines=False)
    events: list[Event] = [
        RunWatched("r1"),
        JobStatusChanged(Running()),
        log_at(1.0, 5, loss=1.5),
        MarkEvent(EvalMark(1, 4)),
        log_at(2.0, 10, eval_loss=0.5),
        JobStatusChanged(Exited(0)),
        RunWatched("r1", JobKind.EXPORT),
        MarkEvent(StageMark(JobStage.EXPORT)),
        JobStatusChanged(Exited(0)),
    ]
    with caplog.at_level(logging.INFO, logger="overbrainer"):
        for at, event in enumerate(events):
            progress.log(event, now=float(at * 100))
    assert [r.getMessage() for r in caplog.records] == [
        "train: job running",
        "train: job exited with code 0",
        # An export's job has no bar: its lines stay.
        "export: exporting GGUF",
        "export: job exited with code 0",
        "export: retrieving results",
    ]


async def test_the_front_end_draws_the_training_bar_with_a_trio_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    console, out = fake_terminal()
    front = CliFrontend(Display.BAR, console)
    with trio.fail_after(60):
        async with front.open_bus() as bus:
            bus.publish(RunWatched("r1"))
            bus.publish(JobStatusChanged(Running()))
            for step in range(1, 11):
                await trio.sleep(0.5)
                bus.publish(Metric(TrainMetric(float(step), step, max_steps=10, loss=1.0)))
            bus.publish(JobStatusChanged(Exited(0)))
            await trio.sleep(0.5)
            front.line("train: run r1 succeeded")
    text = ANSI.sub("", out.getvalue())
    assert "5/10 steps  1.0 it/s, ETA" in text
    assert "10/10 steps  1.0 it/s, took 5s" in text
    assert "job exited with code 0 · loss 1.0000" in text
