"""Events to tagged JSON and back, and the JSONL observer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from overbrainer.events import types as ev
from overbrainer.events.bus import open_event_bus
from overbrainer.events.codec import (
    JsonlObserver,
    event_from_dict,
    event_from_json,
    event_to_dict,
    event_to_json,
)
from overbrainer.model import job_status as js
from overbrainer.model import pod_status as pod
from overbrainer.model import train_metric as mt
from overbrainer.model.job_kind import JobKind
from overbrainer.model.system_sample import Cpu, CpuTimes, Disk, Gpu, Memory, SystemSample
from overbrainer.model.usage import Usage

SAMPLE = SystemSample(
    at=12.5,
    disks=(Disk("/", "ext4", False, 100, 40, 60), Disk("/mnt", None, True, 9, 1, 8)),
    cpu=Cpu(0.5, 1.25, 4.0, True, times=CpuTimes(1.0, 2.0, True, 4.0)),
    memory=Memory(10, 20),
    gpus=(Gpu(0, "H100", 0.9, 1, 2, 60.0, 300.0, 700.0), Gpu(1, "H100")),
)

JOB_STATUSES: list[js.JobStatus] = [js.Running(), js.Exited(3), js.Cancelled(), js.Lost()]
MARKS: list[mt.Mark] = [
    mt.StageMark(mt.JobStage.MERGE),
    mt.EvalMark(2, 5),
    mt.EvalMark(1),
    mt.EndMark(9),
]
POD_STATUSES: list[pod.PodStatus] = [
    pod.PodCreating("ob-run", "H100"),
    pod.PodUnavailable("H100", "none left"),
    pod.PodCreated("p1", "H100", "EU-1", 2.5),
    pod.PodReady("p1", 30.5, "2026-01-01T00:00:00Z"),
    pod.PodDeleting("p1", pod.DeleteReason.BOOTSTRAP_FAILED),
    pod.PodDeleted("p1", 100.0, 0.25),
    pod.PodKept("p1"),
]

EVENTS: list[ev.Event] = [
    ev.StageStarted(ev.Stage.QUESTIONS, 7),
    ev.ItemDone(ev.Stage.ANSWERS, "q1", Usage(3, 4), 0.5, True),
    ev.ItemFailed(ev.Stage.SUBTOPICS, "t1", "boom ü", True),
    ev.StageModel(ev.Stage.SPLIT, "gpt-x"),
    ev.StageFinished(ev.Stage.ANSWERS, ev.StageStats(1, 2, 3, 4, Usage(5, 6), 1.5)),
    ev.RunWatched("r1", JobKind.COMPARE),
    ev.Metric(mt.TrainMetric(1.0, 2, 0.5, 10, 1.25, 1.5, 1e-4, 0.75)),
    ev.System(SAMPLE),
    ev.Push("r1", 10, 20),
    ev.Judged("c1", 3, 4),
    ev.ConcurrencyChanged("openrouter/m", 8, 6, "rate limited"),
    ev.PodSpend("p1", 2.99, 0.4186),
    ev.RateLimitWait("litellm/m", 41.0, "window", "requests", 0, 30),
    ev.RateLimitWait("litellm/m", 12.5, "rate limited (429)"),
    *(ev.MarkEvent(mark) for mark in MARKS),
    *(ev.JobStatusChanged(status) for status in JOB_STATUSES),
    *(ev.PodStatusChanged(status) for status in POD_STATUSES),
]


def test_every_event_class_is_covered() -> None:
    assert {type(event) for event in EVENTS} == set(ev.EVENT_TYPES)


@pytest.mark.parametrize("event", EVENTS, ids=repr)
def test_round_trip(event: ev.Event) -> None:
    text = event_to_json(event)
    assert json.loads(text) == event_to_dict(event)
    assert next(iter(event_to_dict(event))) == "event"
    assert event_from_json(text) == event


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (
            ev.ItemDone(ev.Stage.ANSWERS, "q1", Usage(3, 4)),
            '{"event":"item_done","schema":1,"stage":"answers","id":"q1",'
            '"usage":{"input_tokens":3,"output_tokens":4},"cost":null,"excluded":false}',
        ),
        (
            ev.ItemDone(ev.Stage.QUESTIONS, "s1", Usage(3, 4), 0.5, written=30),
            '{"event":"item_done","schema":1,"stage":"questions","id":"s1",'
            '"usage":{"input_tokens":3,"output_tokens":4},"cost":0.5,"excluded":false,'
            '"written":30}',
        ),
        (
            ev.ConcurrencyChanged("openrouter/m", 8, 6, "rate limited"),
            '{"event":"concurrency","schema":1,"model":"openrouter/m","old":8,"new":6,'
            '"reason":"rate limited"}',
        ),
        (
            ev.RateLimitWait("litellm/m", 41.0, "window", "requests", 0, 30),
            '{"event":"rate_limit_wait","schema":1,"model":"litellm/m","seconds":41.0,'
            '"reason":"window","budget":"requests","remaining":0,"limit":30}',
        ),
        (
            ev.JobStatusChanged(js.Exited(3)),
            '{"event":"job_status","schema":1,"status":{"exited":3}}',
        ),
        (ev.JobStatusChanged(js.Running()), '{"event":"job_status","schema":1,"status":"running"}'),
        (
            ev.MarkEvent(mt.EvalMark(2, 5)),
            '{"event":"mark","schema":1,"mark":{"eval":{"step":2,"total":5}}}',
        ),
        (
            ev.MarkEvent(mt.StageMark(mt.JobStage.TRAIN)),
            '{"event":"mark","schema":1,"mark":{"stage":"train"}}',
        ),
        (ev.MarkEvent(mt.EndMark(9)), '{"event":"mark","schema":1,"mark":{"end":{"step":9}}}'),
        (
            ev.PodStatusChanged(pod.PodCreated("p1", "H100", "EU-1", 2.5)),
            '{"event":"pod_status","schema":1,"status":{"created":{"pod_id":"p1",'
            '"gpu_type":"H100","data_center":"EU-1","cost_per_hour":2.5}}}',
        ),
        (
            ev.PodStatusChanged(pod.PodDeleting("p1", pod.DeleteReason.NOT_READY)),
            '{"event":"pod_status","schema":1,'
            '"status":{"deleting":{"pod_id":"p1","reason":"not_ready"}}}',
        ),
        (
            ev.PodSpend("p1", 2.99, 0.4186),
            '{"event":"pod_spend","schema":1,"pod_id":"p1","cost_per_hour":2.99,"spent":0.4186}',
        ),
        (
            ev.RunWatched("r1", JobKind.EXPORT),
            '{"event":"run_watched","schema":1,"run_id":"r1","job":"export"}',
        ),
    ],
)
def test_pinned_json(event: ev.Event, expected: str) -> None:
    assert event_to_json(event) == expected


def test_system_sample_lists_and_no_cpu_times() -> None:
    data = event_to_dict(ev.System(SAMPLE))
    sample = data["sample"]
    assert isinstance(sample, dict)
    assert isinstance(sample["disks"], list)
    assert isinstance(sample["gpus"], list)
    assert sample["cpu"] == {"usage": 0.5, "load1": 1.25, "cpus": 4.0, "container": True}


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"event": "nope"}, "unknown event tag 'nope'"),
        ({"stage": "answers"}, "unknown event tag None"),
        ({"event": "job_status", "status": "zombie"}, "zombie"),
        ({"event": "stage_started", "stage": "answers", "total": "7"}, "total"),
        ({"event": "stage_started", "stage": "answers"}, "total"),
        ({"event": "stage_started", "stage": "answers", "total": 1, "x": 2}, "x"),
        ({"event": "item_done", "stage": "answers", "id": "q", "excluded": "no"}, "excluded"),
    ],
)
def test_bad_data_raises_value_error(data: dict[str, object], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        event_from_dict(data)


def test_bad_json_raises_value_error() -> None:
    with pytest.raises(ValueError, match="bad event JSON"):
        event_from_json("{")
    with pytest.raises(ValueError, match="JSON object"):
        event_from_json("[1]")


stages = st.sampled_from(list(ev.Stage))
counts = st.integers(min_value=0, max_value=2**53)
costs = st.none() | st.floats(allow_nan=False, allow_infinity=False)
usages = st.builds(Usage, counts, counts)
item_done = st.builds(
    ev.ItemDone,
    stages,
    st.text(),
    st.none() | usages,
    costs,
    st.booleans(),
    st.booleans(),
    st.none() | counts,
)
stats = st.builds(ev.StageStats, counts, counts, counts, counts, usages, costs)
stage_finished = st.builds(ev.StageFinished, stages, stats)


@given(item_done | stage_finished)
def test_round_trip_property(event: ev.Event) -> None:
    assert event_from_json(event_to_json(event)) == event


async def test_jsonl_observer_writes_flushed_lines(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with JsonlObserver(path) as observer, trio.fail_after(5):
        async with open_event_bus(observer=observer) as bus:
            for event in EVENTS:
                bus.publish(event)
            # Read while the file is still open: every line must already be flushed.
            lines = path.read_text(encoding="utf-8").splitlines()
            assert [event_from_json(line) for line in lines] == EVENTS
    assert len(path.read_text(encoding="utf-8").splitlines()) == len(EVENTS)


def test_jsonl_observer_appends(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"event":"push","run_id":"r0","done":0,"total":1}\n', encoding="utf-8")
    with JsonlObserver(path) as observer:
        observer.event(1, ev.Push("r1", 1, 2))
        observer.closed(1)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [event_from_json(line) for line in lines] == [ev.Push("r0", 0, 1), ev.Push("r1", 1, 2)]


def test_jsonl_observer_logs_write_error_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    observer = JsonlObserver(tmp_path / "events.jsonl")
    observer.close()
    observer._file = (tmp_path / "events.jsonl").open("r", encoding="utf-8")  # not writable
    observer.event(1, ev.Push("r1", 1, 2))
    observer.event(1, ev.Push("r1", 2, 2))
    observer.close()
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1
    assert "cannot write events" in warnings[0].getMessage()
