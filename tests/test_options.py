"""The global `--events FILE` flag: every event of the command's bus as a flushed JSON line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from overbrainer.events.types import ItemDone, Stage, StageStarted
from overbrainer.flows.setup import open_events_file
from overbrainer.model.errors import UsageError
from overbrainer.model.usage import Usage
from overbrainer.ui.front import CliFrontend


async def test_events_file_gets_every_event_while_the_bus_is_open(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with trio.fail_after(5), open_events_file(path) as observer:
        async with CliFrontend().open_bus(observer) as bus:
            bus.publish(StageStarted(Stage.ANSWERS, 2))
            bus.publish(ItemDone(Stage.ANSWERS, "q1", Usage(3, 4), 0.5, False))
            lines = path.read_text(encoding="utf-8").splitlines()
            assert [json.loads(line)["event"] for line in lines] == ["stage_started", "item_done"]
    assert json.loads(lines[1]) == {
        "event": "item_done",
        "schema": 1,
        "stage": "answers",
        "id": "q1",
        "usage": {"input_tokens": 3, "output_tokens": 4},
        "cost": 0.5,
        "excluded": False,
    }


def test_no_events_file_means_no_observer() -> None:
    with open_events_file(None) as observer:
        assert observer is None


def test_an_events_file_that_cannot_be_opened_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot open the events file"), open_events_file(tmp_path):
        pass


def test_an_events_file_in_a_missing_directory_is_refused_and_nothing_is_made(
    tmp_path: Path,
) -> None:
    path = tmp_path / "missing" / "dir" / "events.jsonl"
    with pytest.raises(UsageError) as caught, open_events_file(path):
        pass
    assert caught.value.message == (
        f"cannot open the events file {path}: directory {path.parent} does not exist"
    )
    assert list(tmp_path.iterdir()) == []
