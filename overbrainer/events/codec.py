"""Events as tagged JSON objects (one per line for `--events FILE`), via a cattrs converter."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import IO, Any

import attrs
import cattrs
import trio
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.v import format_exception

from overbrainer.events import types as ev
from overbrainer.events.types import Event
from overbrainer.model import job_status as js
from overbrainer.model import pod_status as pod
from overbrainer.model import train_metric as mt
from overbrainer.model.error_groups import unwrapped
from overbrainer.model.redact import redact
from overbrainer.model.system_sample import Cpu

log = logging.getLogger(__name__)

EVENTS_SCHEMA_VERSION = 1
"""The `"schema"` key of every event line (events.schema.json beside this module describes it).

Raised when a key is removed or its type changes; a new event type or optional key keeps it.
"""

FINAL_WRITE_BOUND = 10.0
"""Seconds the last queued lines get to reach the events file when its writer stops."""

EVENT_TAGS: dict[type[Any], str] = {
    ev.StageStarted: "stage_started",
    ev.ItemDone: "item_done",
    ev.ItemFailed: "item_failed",
    ev.StageModel: "stage_model",
    ev.StageFinished: "stage_finished",
    ev.RunWatched: "run_watched",
    ev.Metric: "metric",
    ev.MarkEvent: "mark",
    ev.JobStatusChanged: "job_status",
    ev.PodStatusChanged: "pod_status",
    ev.System: "system",
    ev.Push: "push",
    ev.Judged: "judged",
    ev.ConcurrencyChanged: "concurrency",
    ev.PodSpend: "pod_spend",
    ev.RateLimitWait: "rate_limit_wait",
}
"""The `"event"` tag of each event class."""

_EVENT_BY_TAG = {tag: cls for cls, tag in EVENT_TAGS.items()}

JOB_STATUS_TAGS: dict[str, type[js.JobStatus]] = {
    "running": js.Running,
    "exited": js.Exited,
    "cancelled": js.Cancelled,
    "lost": js.Lost,
}
"""The tag of each job status variant (`"running"`, `{"exited": 3}`)."""

MARK_TAGS: dict[str, type[mt.Mark]] = {
    "stage": mt.StageMark,
    "eval": mt.EvalMark,
    "end": mt.EndMark,
}
"""The tag of each mark variant (`{"stage": "train"}`, `{"eval": {...}}`)."""

POD_STATUS_TAGS: dict[str, type[pod.PodStatus]] = {
    "creating": pod.PodCreating,
    "unavailable": pod.PodUnavailable,
    "created": pod.PodCreated,
    "ready": pod.PodReady,
    "deleting": pod.PodDeleting,
    "deleted": pod.PodDeleted,
    "kept": pod.PodKept,
}
"""The tag of each pod status variant (`{"created": {...}}`)."""


def _strict(kind: type[Any], name: str) -> Any:
    def structure(value: Any, _: type[Any]) -> Any:
        if isinstance(value, bool) and kind is not bool:
            raise ValueError(f"expected {name}, got a boolean")
        if not isinstance(value, kind):
            raise ValueError(f"expected {name}, got {type(value).__name__}")
        return value

    return structure


def _structure_float(value: Any, _: type[Any]) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {type(value).__name__}")
    return float(value)


def _register_tagged(
    converter: cattrs.Converter,
    union: Any,
    variants: Mapping[str, type[Any]],
    inline: frozenset[type[Any]] = frozenset(),
) -> None:
    """Externally tagged union: `"tag"` for field-less variants, else `{"tag": body}`."""
    tags = {cls: tag for tag, cls in variants.items()}
    for cls in variants.values():
        attrs.resolve_types(cls)

    def unstructure(value: Any) -> Any:
        cls = type(value)
        fields = attrs.fields(cls)
        if not fields:
            return tags[cls]
        if cls in inline:
            field = fields[0]
            return {tags[cls]: converter.unstructure(getattr(value, field.name), field.type)}
        return {tags[cls]: converter.unstructure(value, cls)}

    def structure(data: Any, _: type[Any]) -> Any:
        if isinstance(data, str):
            tag, body = data, None
        elif isinstance(data, Mapping) and len(data) == 1:
            ((tag, body),) = data.items()
        else:
            raise ValueError(f"expected one of {sorted(variants)} as a string or one-key object")
        cls = variants.get(tag)
        if cls is None:
            raise ValueError(f"unknown variant {tag!r}, expected one of {sorted(variants)}")
        fields = attrs.fields(cls)
        if not fields:
            if body is not None:
                raise ValueError(f"variant {tag!r} takes no value")
            return cls()
        if body is None:
            raise ValueError(f"variant {tag!r} needs a value")
        if cls in inline:
            return converter.structure({fields[0].name: body}, cls)
        return converter.structure(body, cls)

    converter.register_unstructure_hook(union, unstructure)
    converter.register_structure_hook(union, structure)


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True)
    converter.register_structure_hook(int, _strict(int, "an integer"))
    converter.register_structure_hook(str, _strict(str, "a string"))
    converter.register_structure_hook(bool, _strict(bool, "a boolean"))
    converter.register_structure_hook(float, _structure_float)
    # The counters are kept only to compute the next sample; they mean nothing to a reader.
    converter.register_unstructure_hook(
        Cpu, make_dict_unstructure_fn(Cpu, converter, times=override(omit=True))
    )
    converter.register_structure_hook(
        Cpu, make_dict_structure_fn(Cpu, converter, times=override(omit=True))
    )
    # Our two fields beyond the reference's `item_done` are written only when they say
    # something (`estimated` true, `written` set), so its lines stay as the reference writes them.
    attrs.resolve_types(ev.ItemDone)
    converter.register_unstructure_hook(
        ev.ItemDone,
        make_dict_unstructure_fn(
            ev.ItemDone,
            converter,
            estimated=override(omit_if_default=True),
            written=override(omit_if_default=True),
        ),
    )
    # Our `cost` beyond the reference's `judged` is written only when the judge has a price.
    attrs.resolve_types(ev.Judged)
    converter.register_unstructure_hook(
        ev.Judged,
        make_dict_unstructure_fn(ev.Judged, converter, cost=override(omit_if_default=True)),
    )
    _register_tagged(converter, js.JobStatus, JOB_STATUS_TAGS, inline=frozenset({js.Exited}))
    _register_tagged(converter, mt.Mark, MARK_TAGS, inline=frozenset({mt.StageMark}))
    _register_tagged(converter, pod.PodStatus, POD_STATUS_TAGS)
    for cls in EVENT_TAGS:
        attrs.resolve_types(cls)

    def unstructure_event(event: Any) -> dict[str, Any]:
        body = converter.unstructure(event, type(event))
        return {"event": EVENT_TAGS[type(event)], "schema": EVENTS_SCHEMA_VERSION, **body}

    def structure_event(data: Any, _: type[Any]) -> Any:
        if not isinstance(data, Mapping):
            raise ValueError(f"an event must be a JSON object, got {type(data).__name__}")
        # Lines written before the version existed have no `schema` key: they are version 1.
        schema = data.get("schema", EVENTS_SCHEMA_VERSION)
        if type(schema) is not int or schema != EVENTS_SCHEMA_VERSION:
            raise ValueError(
                f"unknown events schema {schema!r}: this overbrainer reads schema "
                f"{EVENTS_SCHEMA_VERSION}"
            )
        tag = data.get("event")
        cls = _EVENT_BY_TAG.get(tag) if isinstance(tag, str) else None
        if cls is None:
            raise ValueError(f"unknown event tag {tag!r}, expected one of {sorted(_EVENT_BY_TAG)}")
        body = {k: v for k, v in data.items() if k not in ("event", "schema")}
        return converter.structure(body, cls)

    converter.register_unstructure_hook(Event, unstructure_event)
    converter.register_structure_hook(Event, structure_event)
    return converter


converter = _make_converter()
"""Turns events (and the values they carry) into JSON-able data and back."""


def event_to_dict(event: Event) -> dict[str, object]:
    """The event as a JSON-able dict: its `"event"` tag first, then its `"schema"` version."""
    data: dict[str, object] = converter.unstructure(event, Event)
    return data


def _format_exception(exc: BaseException, type_: type[Any] | None) -> str:
    # Our hooks' ValueErrors already say what is wrong; cattrs' own wording hides that.
    if isinstance(exc, ValueError) and type(exc) is ValueError:
        return str(exc)
    return format_exception(exc, type_)


def event_from_dict(data: Mapping[str, object]) -> Event:
    """The event a dict describes; ValueError naming the problem when it describes none."""
    try:
        event: Event = converter.structure(data, Event)  # type: ignore[arg-type]
    except cattrs.BaseValidationError as exc:
        tag = data.get("event")
        messages = cattrs.transform_error(exc, format_exception=_format_exception)
        raise ValueError(f"bad {tag} event: {'; '.join(messages)}") from None
    except (TypeError, KeyError) as exc:
        raise ValueError(f"bad event: {exc}") from None
    return event


def event_to_json(event: Event) -> str:
    """The event as compact JSON text."""
    return json.dumps(event_to_dict(event), separators=(",", ":"), ensure_ascii=False)


def event_from_json(text: str) -> Event:
    """The event JSON text describes; ValueError when it is not valid JSON or no event."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"bad event JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"an event must be a JSON object, got {type(data).__name__}")
    return event_from_dict(data)


class JsonlObserver:
    """An Observer writing each event as one JSON line, flushed; never raises on write.

    Inside `writing()` the lines are written by a task, in a thread, each batch of what was
    queued meanwhile in one go (publish stays synchronous and never waits for the disk);
    outside it (no Trio loop, or a caller that wants each line at once) a line is written as
    its event comes. Known secrets are masked in the line (they can reach an event through
    provider text).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] | None = path.open("a", encoding="utf-8")
        self._failed = False
        self._queued: list[str] = []
        self._wakeup: trio.Event | None = None

    def event(self, bus: int, event: Event) -> None:
        """Append the event as a line (errors are logged once, then lines are dropped)."""
        if self._file is None or self._failed:
            return
        line = redact(event_to_json(event)) + "\n"
        if self._wakeup is None:
            self._write([line])
            return
        self._queued.append(line)
        self._wakeup.set()

    @contextlib.asynccontextmanager
    async def writing(self) -> AsyncIterator[None]:
        """Write the lines in a thread while inside; what is queued at the end is written."""
        self._wakeup = trio.Event()  # from here, event() queues its line
        try:
            async with unwrapped(), trio.open_nursery() as nursery:
                nursery.start_soon(self._write_queued)
                try:
                    yield
                finally:
                    nursery.cancel_scope.cancel()
        finally:
            self._wakeup = None
            # The last lines (the bus's drain) are written even when the block was cancelled.
            with trio.move_on_after(FINAL_WRITE_BOUND, shield=True):
                await trio.to_thread.run_sync(self._write, self._take(), abandon_on_cancel=True)

    async def _write_queued(self) -> None:
        while True:
            wakeup = self._wakeup = trio.Event()
            if not self._queued:
                await wakeup.wait()
            # Left queued until written: a cancel before the thread starts loses nothing, and
            # once it has started (not abandoned on cancel) the batch is written whole.
            lines = self._queued[:]
            await trio.to_thread.run_sync(self._write, lines)
            del self._queued[: len(lines)]

    def _take(self) -> list[str]:
        lines, self._queued = self._queued, []
        return lines

    def _write(self, lines: list[str]) -> None:
        file = self._file
        if not lines or file is None or self._failed:
            return
        try:
            file.write("".join(lines))
            file.flush()
        except Exception as exc:
            # publish must never raise: a broken events file only loses its lines.
            self._failed = True
            log.warning("cannot write events to %s: %s", self.path, exc)

    def closed(self, bus: int) -> None:
        """A bus ended; the file stays open for other buses."""

    def close(self) -> None:
        """Close the file; later events are dropped."""
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()
            except OSError as exc:
                log.warning("cannot close events file %s: %s", self.path, exc)

    def __enter__(self) -> JsonlObserver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
