"""`--events FILE` written off the Trio thread: every event, in order, batched in a thread."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import trio
import trio.lowlevel

from overbrainer.events import types as ev
from overbrainer.events.bus import open_event_bus
from overbrainer.events.codec import JsonlObserver, event_from_json
from overbrainer.flows.setup import CommandOptions, open_command
from overbrainer.project.init import init_project
from overbrainer.ui.front import CliFrontend


def _events(count: int) -> list[ev.Event]:
    return [ev.Push(f"r{i}", i, count) for i in range(count)]


def _read(path: Path) -> list[ev.Event]:
    return [event_from_json(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_every_event_in_order_written_in_threads_in_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "events.jsonl"
    events = _events(2000)
    with JsonlObserver(path) as observer, trio.fail_after(20):
        writes: list[tuple[threading.Thread, int]] = []
        write = observer._write

        def noted(lines: list[str]) -> None:
            writes.append((threading.current_thread(), len(lines)))
            write(lines)

        monkeypatch.setattr(observer, "_write", noted)
        async with observer.writing(), open_event_bus(observer=observer) as bus:
            for start in range(0, len(events), 100):
                for event in events[start : start + 100]:
                    bus.publish(event)
                await trio.lowlevel.checkpoint()  # the writer may take this burst now
        assert _read(path) == events
    main = threading.main_thread()
    assert writes and all(thread is not main for thread, _ in writes)
    # Bursts are written together, not one thread hop per event.
    assert len([n for _, n in writes if n]) < len(events) / 10


async def test_lines_queued_when_the_block_is_cancelled_are_still_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    events = _events(50)
    with JsonlObserver(path) as observer, trio.fail_after(20):
        with trio.CancelScope() as scope:
            async with observer.writing():
                for event in events:
                    observer.event(1, event)
                scope.cancel()
                await trio.sleep_forever()
        assert _read(path) == events


async def test_a_command_writes_every_event_to_its_events_file(tmp_path: Path) -> None:
    init_project(tmp_path / "p")
    path = tmp_path / "events.jsonl"
    events = _events(500)
    options = CommandOptions(project_dir=tmp_path / "p", events=path)
    with trio.fail_after(20):
        async with open_command(options, CliFrontend()) as command:
            for event in events:
                command.bus.publish(event)
    assert _read(path) == events
