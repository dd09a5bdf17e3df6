"""`subtopics --force` and `questions --force` replace whole sets, never delete first.

The item is a topic's subtopics or a subtopic's questions: each keeps its old set until its new
set is complete, whatever stops the command.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.storage.records import Question, Subtopic
from overbrainer.storage.replacement import read_current
from tests.force_support import Watcher, delayed, force_state, old_questions, whole_lines
from tests.pipeline_support import make_project, overbrainer, start, wait_until


def _view(root: Path, name: str) -> list[Subtopic | Question]:
    """The records of `data/<name>.jsonl` as every reader sees them."""
    data, state = root / "data" / f"{name}.jsonl", root / ".overbrainer" / f"force-{name}.json"
    if name == "subtopics":
        return [*read_current(data, state, Subtopic.from_json, lambda record: record.id)]
    return [*read_current(data, state, Question.from_json, lambda record: record.id)]


def _sets(root: Path, name: str) -> dict[str, set[str]]:
    """Each item's record names: a topic's subtopics, a subtopic's questions."""
    found: dict[str, set[str]] = {}
    for record in _view(root, name):
        if isinstance(record, Subtopic):
            found.setdefault(record.topic, set()).add(record.name)
        else:
            found.setdefault(record.subtopic_id, set()).add(record.text)
    return found


def old_or_new(root: Path, name: str, old: dict[str, set[str]], size: int) -> Watcher:
    """A watcher: every complete line parses, and each item has all of its old records or a
    complete new set of `size` (as readers see the file)."""

    def check() -> str | None:
        whole_lines(root / "data" / f"{name}.jsonl")
        sets = _sets(root, name)
        for item, names in old.items():
            mine = sets.get(item, set())
            if not names <= mine and len(mine - names) < size:
                return f"{item}: neither its old set nor a new one: {sorted(mine)}"
        return None

    return Watcher(check)


async def test_subtopics_force_ctrl_c_keeps_the_old_set_of_the_topic_not_redone(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    old_questions(root, ("ownership", "async"))
    old = _sets(root, "subtopics")
    watcher = old_or_new(root, "subtopics", old, 2)
    async with open_stub(delayed(2.0)) as stub, trio.open_nursery() as nursery:
        nursery.start_soon(watcher.run)
        process = await start(nursery, root, "subtopics", "--force", url=stub.url)
        await wait_until(lambda: len(stub.completions) == 1)
        process.send_signal(signal.SIGINT)
        with trio.fail_after(10):
            assert await process.wait() == 130
        assert len(stub.completions) == 1
        sets = _sets(root, "subtopics")
        # The first topic drained its new set and dropped its old one; the other kept its own.
        assert sets["ownership"].isdisjoint(old["ownership"]) and len(sets["ownership"]) == 2
        assert sets["async"] == old["async"]
        # Compacted on the way out: the file holds exactly what readers see.
        lines = (root / "data" / "subtopics.jsonl").read_text().splitlines()
        assert len(lines) == 4

        stub.responder = delayed(0.0)
        rerun = await overbrainer(root, "subtopics", url=stub.url)
        assert rerun.code == 0, rerun.stderr
        assert rerun.out_lines[0].startswith("subtopics: 1 done, 1 skipped")
        nursery.cancel_scope.cancel()
    assert watcher.failure is None, watcher.failure
    sets = _sets(root, "subtopics")
    assert all(sets[t].isdisjoint(old[t]) and len(sets[t]) == 2 for t in ("ownership", "async"))
    assert force_state(root, "subtopics") is None
    # Downstream records are never deleted by an upstream force.
    assert len((root / "data" / "questions.jsonl").read_text().splitlines()) == 8


async def test_subtopics_force_kill_9_in_flight_keeps_every_old_set(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    old_questions(root, ("ownership", "async"))
    before = (root / "data" / "subtopics.jsonl").read_bytes()
    async with open_stub(delayed(20.0)) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "subtopics", "--force", url=stub.url)
        await wait_until(lambda: len(stub.completions) == 1)
        os.kill(process.pid, signal.SIGKILL)
        with trio.fail_after(5):
            assert await process.wait() == -signal.SIGKILL
        nursery.cancel_scope.cancel()
    assert (root / "data" / "subtopics.jsonl").read_bytes() == before
    assert force_state(root, "subtopics") is not None


async def test_questions_force_ctrl_c_then_kill_9_then_rerun(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=2)
    old_questions(root, ("ownership", "async"))
    old = _sets(root, "questions")
    watcher = old_or_new(root, "questions", old, 2)
    async with open_stub(delayed(2.0)) as stub, trio.open_nursery() as nursery:
        nursery.start_soon(watcher.run)
        process = await start(nursery, root, "questions", "--force", url=stub.url)
        await wait_until(lambda: len(stub.completions) == 2)
        process.send_signal(signal.SIGINT)
        with trio.fail_after(10):
            assert await process.wait() == 130
        sets = _sets(root, "questions")
        redone = [s for s in old if sets[s].isdisjoint(old[s])]
        assert len(redone) == 2
        assert all(len(sets[s]) == 2 for s in redone)
        assert all(sets[s] == old[s] for s in old if s not in redone)

        # A second force run is killed in flight: still old or new sets, nothing lost.
        process = await start(nursery, root, "questions", "--force", url=stub.url)
        await wait_until(lambda: len(stub.completions) == 4)
        os.kill(process.pid, signal.SIGKILL)
        with trio.fail_after(5):
            assert await process.wait() == -signal.SIGKILL
        assert _sets(root, "questions") == sets

        stub.responder = delayed(0.0)
        rerun = await overbrainer(root, "questions", url=stub.url)
        assert rerun.code == 0, rerun.stderr
        assert rerun.out_lines[0].startswith("questions: 2 done, 2 skipped")
        nursery.cancel_scope.cancel()
    assert watcher.failure is None, watcher.failure
    assert watcher.rounds > 10
    sets = _sets(root, "questions")
    assert sets.keys() == old.keys()
    assert all(sets[s].isdisjoint(old[s]) and len(sets[s]) == 2 for s in old)
    assert len((root / "data" / "questions.jsonl").read_text().splitlines()) == 8
    assert force_state(root, "questions") is None
