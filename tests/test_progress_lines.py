"""Progress lines for pods, jobs, phases, retries and failures, pinned to the reference."""

from __future__ import annotations

import logging

import pytest

from overbrainer.events.types import (
    Event,
    ItemDone,
    ItemFailed,
    JobStatusChanged,
    MarkEvent,
    Metric,
    PodStatusChanged,
    Push,
    RunWatched,
    Stage,
    StageStarted,
)
from overbrainer.model.job_kind import JobKind
from overbrainer.model.job_status import Exited, Lost, Running
from overbrainer.model.pod_status import (
    DeleteReason,
    PodCreated,
    PodCreating,
    PodDeleted,
    PodDeleting,
    PodKept,
    PodReady,
    PodUnavailable,
    pod_line,
)
from overbrainer.model.train_metric import EndMark, EvalMark, JobStage, StageMark, TrainMetric
from overbrainer.ui.progress import Progress, metric_line


def test_pod_lines() -> None:
    assert pod_line(PodCreating("overbrainer-r1-1", "NVIDIA A40")) == (
        "creating overbrainer-r1-1 (NVIDIA A40)"
    )
    assert pod_line(PodUnavailable("NVIDIA A40", "no capacity")) == (
        "NVIDIA A40 unavailable (no capacity)"
    )
    assert pod_line(PodCreated("k3x9abc", "NVIDIA RTX A6000", "EU-RO-1", 0.53)) == (
        "created k3x9abc (NVIDIA RTX A6000, EU-RO-1, $0.53/h); waiting for SSH"
    )
    assert pod_line(PodCreated("k3x9abc", "NVIDIA RTX A6000")) == (
        "created k3x9abc (NVIDIA RTX A6000); waiting for SSH"
    )
    assert pod_line(PodReady("k3x9abc", 45, "2026-09-22T18:00:00Z")) == (
        "k3x9abc ready after 45s; watchdog armed, deletes it by 2026-09-22T18:00:00Z at the latest"
    )
    assert pod_line(PodReady("k3x9abc", 60)) == (
        "k3x9abc ready after 1m00s; watchdog armed, kept with no time limit (--keep-pod)"
    )
    assert pod_line(PodDeleting("k3x9abc", DeleteReason.RETRIEVED)) == (
        "deleting k3x9abc (results retrieved)"
    )
    assert pod_line(PodDeleted("k3x9abc", 4320, 0.64)) == "k3x9abc deleted after 1h12m, about $0.64"
    assert pod_line(PodDeleted("k3x9abc")) == "k3x9abc deleted"
    assert pod_line(PodKept("k3x9abc")) == "k3x9abc kept (--keep-pod)"


def test_third_metric_line_example() -> None:
    assert metric_line(TrainMetric(time=0, step=3, eval_loss=1.0)) == "step 3, eval_loss 1.0000"


def lines(events: list[Event], caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    progress = Progress()
    with caplog.at_level(logging.DEBUG, logger="overbrainer"):
        for at, event in enumerate(events):
            progress.log(event, now=float(at * 100))
    return [(r.levelname, r.getMessage()) for r in caplog.records]


def test_item_lines_retries_and_failures(caplog: pytest.LogCaptureFixture) -> None:
    a = Stage.ANSWERS
    got = lines(
        [
            StageStarted(a, 2),
            ItemFailed(a, "q1", "HTTP 429: slow down; retrying in 1.0s", retryable=True),
            ItemDone(a, "q1"),
            ItemFailed(a, "q2", "HTTP 500: boom", retryable=False),
            Push("r1", 412_345_678, 1_234_567_890),
        ],
        caplog,
    )
    assert got == [
        ("INFO", "answers: 2 to process"),
        ("WARNING", "answers: q1: HTTP 429: slow down; retrying in 1.0s"),
        ("DEBUG", "answers: q1 done"),
        ("INFO", "answers: 1/2"),
        ("ERROR", "answers: q2 failed: HTTP 500: boom"),
        ("INFO", "answers: 2/2"),
        ("INFO", "push: r1 412.3 MB/1.2 GB"),
    ]


def test_phases_and_job_status_are_told_on_change(caplog: pytest.LogCaptureFixture) -> None:
    def metric(step: int, **extra: float) -> Metric:
        return Metric(TrainMetric(time=0, step=step, max_steps=10, **extra))

    got = lines(
        [
            RunWatched("r1"),
            JobStatusChanged(Running()),
            metric(5, loss=1.5),
            MarkEvent(EvalMark(1, 4)),
            MarkEvent(EvalMark(2, 4)),
            MarkEvent(EvalMark(4, 4)),
            metric(10, loss=1.0),
            MarkEvent(EndMark(10)),
            MarkEvent(StageMark(JobStage.MERGE)),
            JobStatusChanged(Exited(0)),
        ],
        caplog,
    )
    assert got == [
        ("INFO", "train: job running"),
        ("INFO", "train: step 5/10 (50%), loss 1.5000"),
        ("INFO", "train: evaluating 1/4"),
        ("INFO", "train: evaluating 2/4"),
        ("INFO", "train: evaluating 4/4"),
        ("INFO", "train: step 10/10 (100%), loss 1.0000"),
        ("INFO", "train: finalizing (saving model)"),
        ("INFO", "train: merging adapter"),
        ("INFO", "train: job exited with code 0"),
        ("INFO", "train: retrieving results"),
    ]


def test_subject_follows_the_watched_job(caplog: pytest.LogCaptureFixture) -> None:
    got = lines(
        [
            RunWatched("e1", JobKind.EXPORT),
            JobStatusChanged(Lost()),
            PodStatusChanged(PodKept("p")),
        ],
        caplog,
    )
    assert got == [
        ("INFO", "export: job lost (stopped without an exit code)"),
        ("INFO", "export: retrieving results"),
        ("INFO", "pod: p kept (--keep-pod)"),
    ]


def test_pod_events_render_as_pod_lines(caplog: pytest.LogCaptureFixture) -> None:
    got = lines(
        [
            PodStatusChanged(PodCreating("overbrainer-r1-1", "NVIDIA A40")),
            PodStatusChanged(PodReady("k3x9abc", 221, "2026-09-22T18:00:00Z")),
            PodStatusChanged(PodReady("k3x9abc", 45)),
            PodStatusChanged(PodDeleting("k3x9abc", DeleteReason.INTERRUPTED)),
            PodStatusChanged(PodDeleting("k3x9abc", DeleteReason.COST_CAP)),
            PodStatusChanged(PodDeleted("k3x9abc", 4320, 0.64)),
        ],
        caplog,
    )
    assert got == [
        ("INFO", "pod: creating overbrainer-r1-1 (NVIDIA A40)"),
        (
            "INFO",
            "pod: k3x9abc ready after 3m41s; watchdog armed, deletes it by "
            "2026-09-22T18:00:00Z at the latest",
        ),
        (
            "INFO",
            "pod: k3x9abc ready after 45s; watchdog armed, kept with no time limit (--keep-pod)",
        ),
        ("INFO", "pod: deleting k3x9abc (interrupted before the job started)"),
        ("INFO", "pod: deleting k3x9abc (max_cost_usd reached)"),
        ("INFO", "pod: k3x9abc deleted after 1h12m, about $0.64"),
    ]
