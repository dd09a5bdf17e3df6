"""The events schema (overbrainer/events/events.schema.json) against every event the code writes."""

from __future__ import annotations

import configparser
import enum
import json
import typing
from collections.abc import Iterator
from fnmatch import fnmatch
from importlib import resources
from pathlib import Path

import attrs
import pytest
from jsonschema import Draft202012Validator

from overbrainer.events import codec
from overbrainer.events import types as ev
from overbrainer.events.codec import (
    EVENT_TAGS,
    EVENTS_SCHEMA_VERSION,
    JsonlObserver,
    event_from_dict,
    event_from_json,
    event_to_dict,
    event_to_json,
)
from overbrainer.model import job_status as js
from overbrainer.model import pod_status as pod
from overbrainer.model import system_sample as sy
from overbrainer.model import train_metric as mt
from overbrainer.model.job_kind import JobKind
from overbrainer.model.usage import Usage

SCHEMA: dict[str, typing.Any] = json.loads(
    resources.files("overbrainer.events").joinpath("events.schema.json").read_text("utf-8")
)
DEFS: dict[str, typing.Any] = SCHEMA["$defs"]
VALIDATOR = Draft202012Validator(SCHEMA)

OPTIONAL_KEYS = {"item_done": {"estimated", "written"}, "judged": {"cost"}}
"""Keys the codec writes only when they say something (omitted at their default)."""

VALUE_DEFS: dict[str, type[typing.Any]] = {
    "Usage": Usage,
    "StageStats": ev.StageStats,
    "TrainMetric": mt.TrainMetric,
    "Disk": sy.Disk,
    "Cpu": sy.Cpu,
    "Memory": sy.Memory,
    "Gpu": sy.Gpu,
    "SystemSample": sy.SystemSample,
}
"""The values events carry, each described by the definition of its name."""

ENUM_DEFS: dict[str, type[enum.Enum]] = {
    "Stage": ev.Stage,
    "JobKind": JobKind,
    "JobStage": mt.JobStage,
    "DeleteReason": pod.DeleteReason,
}

UNION_DEFS: dict[str, tuple[object, dict[str, type[typing.Any]]]] = {
    "JobStatus": (js.JobStatus, codec.JOB_STATUS_TAGS),
    "Mark": (mt.Mark, codec.MARK_TAGS),
    "PodStatus": (pod.PodStatus, codec.POD_STATUS_TAGS),
}
"""Each tagged union: its type and the codec's tag of each variant."""

FULL_SAMPLE = sy.SystemSample(
    at=1765000000.5,
    disks=(sy.Disk("/", "ext4", False, 100, 40, 60), sy.Disk("/mnt", None, True, 9, 1, 8)),
    cpu=sy.Cpu(0.5, 1.25, 4.0, True, times=sy.CpuTimes(1.0, 2.0, True, 4.0)),
    memory=sy.Memory(10, 20),
    gpus=(sy.Gpu(0, "H100", 0.9, 1, 2, 60.0, 300.0, 700.0), sy.Gpu(1, "H100")),
)

INSTANCES: list[ev.Event] = [
    *(ev.StageStarted(stage, 7) for stage in ev.Stage),
    ev.ItemDone(ev.Stage.ANSWERS, "q1", Usage(3, 4), 0.5, excluded=True),
    ev.ItemDone(ev.Stage.ANSWERS, "q2", Usage(3, 4), 0.5, estimated=True),
    ev.ItemDone(ev.Stage.QUESTIONS, "s1", Usage(3, 4), None, written=30),
    ev.ItemDone(ev.Stage.ANSWERS, "q3"),
    ev.ItemFailed(ev.Stage.SUBTOPICS, "t1", "HTTP 500: boom ü", retryable=True),
    ev.ItemFailed(ev.Stage.ANSWERS, "q1", "no reasoning"),
    ev.StageModel(ev.Stage.ANSWERS, "deepseek/deepseek-r1"),
    ev.StageFinished(ev.Stage.ANSWERS, ev.StageStats(1, 2, 3, 4, Usage(5, 6), 1.5)),
    ev.StageFinished(ev.Stage.SPLIT, ev.StageStats()),
    ev.RunWatched("20261207-101500-7f3a"),
    *(ev.RunWatched("20261207-101500-7f3a", kind) for kind in JobKind),
    ev.Metric(mt.TrainMetric(1.5, 2, 0.5, 10, 1.25, 1.5, 1e-4, 0.75)),
    ev.Metric(mt.TrainMetric(1.5, 0)),
    *(ev.MarkEvent(mt.StageMark(stage)) for stage in mt.JobStage),
    ev.MarkEvent(mt.EvalMark(2, 5)),
    ev.MarkEvent(mt.EvalMark(1)),
    ev.MarkEvent(mt.EndMark(9)),
    *(ev.JobStatusChanged(status) for status in (js.Running(), js.Cancelled(), js.Lost())),
    ev.JobStatusChanged(js.Exited(0)),
    ev.JobStatusChanged(js.Exited(-9)),
    ev.PodStatusChanged(pod.PodCreating("ob-run", "NVIDIA H100 80GB HBM3")),
    ev.PodStatusChanged(pod.PodUnavailable("NVIDIA H100 80GB HBM3", "none left")),
    ev.PodStatusChanged(pod.PodCreated("p1", "NVIDIA H100 80GB HBM3", "EU-RO-1", 2.99)),
    ev.PodStatusChanged(pod.PodCreated("p1", "NVIDIA H100 80GB HBM3")),
    ev.PodStatusChanged(pod.PodReady("p1", 30.5, "2026-12-07T22:00:00Z")),
    ev.PodStatusChanged(pod.PodReady("p1", 30.5)),
    *(ev.PodStatusChanged(pod.PodDeleting("p1", reason)) for reason in pod.DeleteReason),
    ev.PodStatusChanged(pod.PodDeleted("p1", 100.0, 0.25)),
    ev.PodStatusChanged(pod.PodDeleted("p1")),
    ev.PodStatusChanged(pod.PodKept("p1")),
    ev.System(FULL_SAMPLE),
    ev.System(sy.SystemSample(at=1.0)),
    ev.Push("20261207-101500-7f3a", 10, 20),
    ev.Judged("c1", 3, 4),
    ev.Judged("c1", 3, 4, 0.0125),
    ev.ConcurrencyChanged("openrouter/deepseek/deepseek-r1", 8, 6, "rate limited"),
    ev.PodSpend("p1", 2.99, 0.4186),
    ev.RateLimitWait("litellm/m", 41.0, "window", "requests", 0, 30),
    ev.RateLimitWait("litellm/m", 41.0, "window", "tokens", 12, None),
    ev.RateLimitWait("litellm/m", 12.5, "rate limited (429)"),
]
"""At least one of every event, every variant of each tagged union, optional keys set and not."""


def refs(node: object) -> Iterator[str]:
    """The definition names every `$ref` under `node` points at."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                assert isinstance(value, str) and value.startswith("#/$defs/")
                yield value.removeprefix("#/$defs/")
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def nullable(prop: dict[str, typing.Any]) -> bool:
    """Whether a property's schema lets it be null."""
    types = prop.get("type", [])
    return "null" in types or {"type": "null"} in prop.get("oneOf", [])


def variant_tags(union: dict[str, typing.Any]) -> set[str]:
    """The tags a union definition spells: a bare string, or an object's one key."""
    tags = set()
    for variant in union["oneOf"]:
        if "const" in variant:
            tags.add(variant["const"])
        else:
            assert variant["additionalProperties"] is False
            [tag] = variant["required"]
            assert list(variant["properties"]) == [tag]
            tags.add(tag)
    return tags


# --- the schema and the code describe the same events ------------------------------------------


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(SCHEMA)
    assert DEFS["schema"] == {
        "description": DEFS["schema"]["description"],
        "const": EVENTS_SCHEMA_VERSION,
    }


def test_the_schema_is_installed_with_the_package() -> None:
    config = configparser.ConfigParser()
    config.read(Path(__file__).resolve().parent.parent / "setup.cfg", encoding="utf-8")
    patterns = [p.strip() for p in config["options.package_data"]["overbrainer"].split(",")]
    assert any(fnmatch("events/events.schema.json", pattern) for pattern in patterns)


def test_one_definition_per_event_the_code_emits_and_none_other() -> None:
    assert set(EVENT_TAGS) == set(ev.EVENT_TYPES)
    tags = set(EVENT_TAGS.values())
    assert {ref for ref in refs(SCHEMA["oneOf"])} == tags
    assert len(SCHEMA["oneOf"]) == len(tags)
    assert set(SCHEMA["properties"]["event"]["enum"]) == tags


def test_every_definition_is_reached_from_the_root() -> None:
    reached: set[str] = set()
    todo = list(refs({k: v for k, v in SCHEMA.items() if k != "$defs"}))
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend(refs(DEFS[name]))
    assert reached == set(DEFS)


@pytest.mark.parametrize(("cls", "tag"), EVENT_TAGS.items(), ids=EVENT_TAGS.values())
def test_each_event_definition_has_exactly_the_class_fields(cls: type[ev.Event], tag: str) -> None:
    definition = DEFS[tag]
    fields = [field.name for field in attrs.fields(cls)]
    assert list(definition["properties"]) == ["event", "schema", *fields]
    assert definition["properties"]["event"] == {"const": tag}
    assert definition["properties"]["schema"] == {"$ref": "#/$defs/schema"}
    optional = OPTIONAL_KEYS.get(tag, set())
    assert definition["required"] == [k for k in definition["properties"] if k not in optional]
    assert definition["additionalProperties"] is False


@pytest.mark.parametrize(("name", "cls"), VALUE_DEFS.items(), ids=VALUE_DEFS)
def test_each_value_definition_has_exactly_the_class_fields(
    name: str, cls: type[typing.Any]
) -> None:
    definition = DEFS[name]
    # Cpu's counters are kept only to compute the next sample: the codec leaves them out.
    fields = [field.name for field in attrs.fields(cls) if (cls, field.name) != (sy.Cpu, "times")]
    assert list(definition["properties"]) == fields
    assert definition["required"] == fields
    assert definition["additionalProperties"] is False


@pytest.mark.parametrize(("name", "kind"), ENUM_DEFS.items(), ids=ENUM_DEFS)
def test_enums_are_the_codes_values(name: str, kind: type[enum.Enum]) -> None:
    assert DEFS[name]["enum"] == [member.value for member in kind]


@pytest.mark.parametrize(("name", "union"), UNION_DEFS.items(), ids=UNION_DEFS)
def test_tagged_unions_spell_every_variant(
    name: str, union: tuple[object, dict[str, type[typing.Any]]]
) -> None:
    kind, tags = union
    assert set(tags.values()) == set(typing.get_args(kind))
    assert variant_tags(DEFS[name]) == set(tags)


# --- what the codec writes validates ------------------------------------------------------------


def test_the_instances_cover_every_event_variant_and_optional_key() -> None:
    assert {type(event) for event in INSTANCES} == set(ev.EVENT_TYPES)
    variants = {
        type(value)
        for event in INSTANCES
        for value in (getattr(event, "status", None), getattr(event, "mark", None))
        if value is not None
    }
    for _, tags in UNION_DEFS.values():
        assert set(tags.values()) <= variants
    lines = [event_to_dict(event) for event in INSTANCES]
    for tag, definition in ((tag, DEFS[tag]) for tag in EVENT_TAGS.values()):
        tagged = [line for line in lines if line["event"] == tag]
        for key, prop in definition["properties"].items():
            assert any(key in line for line in tagged), (tag, key)
            if key not in definition["required"]:
                assert any(key not in line for line in tagged), (tag, key)
            if nullable(prop):
                assert any(line[key] is None for line in tagged), (tag, key)
                assert any(line[key] is not None for line in tagged), (tag, key)


@pytest.mark.parametrize("event", INSTANCES, ids=repr)
def test_every_event_the_codec_writes_validates(event: ev.Event) -> None:
    line = event_to_json(event)
    data = json.loads(line)
    VALIDATOR.validate(data)
    assert list(data)[:2] == ["event", "schema"]
    assert data["schema"] == EVENTS_SCHEMA_VERSION
    assert event_from_json(line) == event


def test_the_lines_of_the_events_file_writer_validate(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with JsonlObserver(path) as observer:
        for event in INSTANCES:
            observer.event(1, event)
    lines = path.read_text(encoding="utf-8").splitlines()
    for line in lines:
        VALIDATOR.validate(json.loads(line))
    assert [event_from_json(line) for line in lines] == INSTANCES


# --- what breaks the schema is refused ----------------------------------------------------------

GOOD = {
    "event": "stage_started",
    "schema": 1,
    "stage": "answers",
    "total": 7,
}


@pytest.mark.parametrize(
    "bad",
    [
        {**GOOD, "total": "7"},
        {**GOOD, "total": 1.5},
        {**GOOD, "total": True},
        {k: v for k, v in GOOD.items() if k != "total"},
        {**GOOD, "extra": 1},
        {**GOOD, "stage": "nope"},
        {**GOOD, "event": "stage_begun"},
        {**GOOD, "schema": 2},
        {k: v for k, v in GOOD.items() if k != "schema"},
        {"event": "job_status", "schema": 1, "status": "zombie"},
        {"event": "job_status", "schema": 1, "status": {"exited": "3"}},
        {"event": "mark", "schema": 1, "mark": {"stage": "train", "end": {"step": 1}}},
        {"event": "pod_status", "schema": 1, "status": {"kept": {"pod_id": "p1", "x": 1}}},
        {"event": "pod_status", "schema": 1, "status": "kept"},
        {"event": "judged", "schema": 1, "compare_id": "c1", "done": 1, "total": 2, "cost": None},
    ],
    ids=repr,
)
def test_a_line_that_breaks_the_schema_is_refused(bad: dict[str, object]) -> None:
    VALIDATOR.validate(GOOD)
    assert not VALIDATOR.is_valid(bad)


# --- the reader and the version -----------------------------------------------------------------


def test_lines_without_a_version_are_read_as_version_1() -> None:
    old = {k: v for k, v in GOOD.items() if k != "schema"}
    assert event_from_dict(old) == ev.StageStarted(ev.Stage.ANSWERS, 7)


@pytest.mark.parametrize("version", [2, 0, "1", True, None, 1.0])
def test_an_unknown_version_is_refused_by_the_reader(version: object) -> None:
    with pytest.raises(ValueError) as caught:
        event_from_dict({**GOOD, "schema": version})
    assert str(caught.value) == (
        f"unknown events schema {version!r}: this overbrainer reads schema 1"
    )
