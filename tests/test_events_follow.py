"""A real run's `--events FILE` against the schema; docs/events.md's follower reading it live."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

import attrs
import trio

from overbrainer.devtools.stub_model import default_reply
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from tests.pipeline_support import PRICES, events, make_project, overbrainer, start
from tests.test_events_schema import VALIDATOR

DOCS = Path(__file__).resolve().parent.parent / "docs" / "events.md"


def failing_once() -> Callable[[Recorded], Reply]:
    """The stand-in's replies, but the parent's first request fails with a 500 (then retried)."""
    failed = False

    def reply(request: Recorded) -> Reply:
        nonlocal failed
        body = request.body_json if isinstance(request.body_json, dict) else {}
        if body.get("model") == "parent-model" and not failed:
            failed = True
            return attrs.evolve(default_reply(request), status=500, body=b'{"error":"busy"}')
        return default_reply(request)

    return reply


def follower(tmp_path: Path) -> Path:
    """The follower of docs/events.md, written to a file as a reader would save it."""
    match = re.search(r"```python\n(# follow_events\.py.*?)```", DOCS.read_text(), re.DOTALL)
    assert match, "docs/events.md has no follow_events.py block"
    script = tmp_path / "follow_events.py"
    script.write_text(match.group(1))
    return script


async def test_a_real_runs_events_file_validates_line_by_line(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    path = tmp_path / "events.jsonl"
    async with open_stub(failing_once()) as stub:
        stub.models = PRICES
        result = await overbrainer(root, "--events", str(path), "run", "--no-train", url=stub.url)
    assert result.code == 0, result.stderr[-3000:]
    lines = events(path)
    for line in lines:
        VALIDATOR.validate(line)
        assert list(line)[:2] == ["event", "schema"]
    kinds = {line["event"] for line in lines}
    assert {"stage_started", "stage_model", "item_done", "item_failed", "stage_finished"} <= kinds
    finished = [line["stage"] for line in lines if line["event"] == "stage_finished"]
    assert finished == ["subtopics", "questions", "answers", "split"]


async def test_the_docs_follower_reads_a_real_run_as_it_is_written(tmp_path: Path) -> None:
    script = follower(tmp_path)
    root = make_project(tmp_path / "p")
    path = tmp_path / "events.jsonl"
    async with open_stub(default_reply) as stub, trio.open_nursery() as nursery:
        run = await start(nursery, root, "--events", str(path), "run", "--no-train", url=stub.url)
        # Started beside the command, before its file exists: it waits for it, then follows.
        with trio.fail_after(60):
            followed = await trio.run_process(
                [sys.executable, str(script), str(path), str(run.pid)],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
        # It returns only once the command has ended and every line is read.
        assert run.returncode == 0, (root / "stderr.txt").read_text()[-3000:]
    assert followed.returncode == 0, followed.stderr.decode()
    printed = followed.stdout.decode().splitlines()
    written = events(path)
    assert [line.split(" ", 1)[0] for line in printed] == [line["event"] for line in written]
    assert printed[-1].startswith('stage_finished {"stage": "split"')


async def test_the_docs_follower_skips_a_newer_type_and_stops_at_a_line_that_breaks_it(
    tmp_path: Path,
) -> None:
    script = follower(tmp_path)
    path = tmp_path / "events.jsonl"
    good = {"event": "stage_started", "schema": 1, "stage": "answers", "total": 2}
    newer = {"event": "stage_paused", "schema": 1, "stage": "answers"}  # a type added later
    lines = [good, newer, {**good, "total": "2"}, good]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with trio.fail_after(30):
        followed = await trio.run_process(
            [sys.executable, str(script), str(path)],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert followed.returncode == 1
    assert followed.stdout.decode() == 'stage_started {"stage": "answers", "total": 2}\n'
    assert followed.stderr.decode() == f"error: {path} line 3: '2' is not of type 'integer'\n"
