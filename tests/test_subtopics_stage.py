"""Stage `subtopics` in process against the stub: missing counts, ID dedup, rejects, --force."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from overbrainer.config.settings import Topic
from overbrainer.devtools.stub_script import Reply
from overbrainer.events.types import Stage, StageStarted
from overbrainer.model.usage import Usage
from overbrainer.pipeline.engine import StageItemsFailed, StageStopped
from overbrainer.pipeline.subtopics import new_subtopics, subtopics_stage
from overbrainer.storage.ids import subtopic_id
from overbrainer.storage.records import RejectedSubtopic, Subtopic
from tests.generator_harness import harness

OWNERSHIP = Topic("ownership", subtopics=3, questions_per_subtopic=2, description="Rust memory")
ASYNC = Topic("async", subtopics=2, questions_per_subtopic=2)


def _reply(*names: str) -> Reply:
    return Reply(content=json.dumps(list(names)), usage=(100, 50))


def _stored(topic: str, name: str) -> Subtopic:
    return Subtopic(subtopic_id(topic, name), topic, name)


def test_new_subtopics_drop_known_and_repeated_ids_and_keep_the_first_missing() -> None:
    avoid = {subtopic_id("t", "Borrowing")}
    kept = new_subtopics("t", ["borrowing ", "Lifetimes", "LIFETIMES", "Moves", "Traits"], avoid, 2)
    assert kept == [_stored("t", "Lifetimes"), _stored("t", "Moves")]
    assert subtopic_id("t", "Moves") in avoid
    assert subtopic_id("t", "Traits") not in avoid


async def test_each_topic_gets_its_missing_count_with_names_as_returned(tmp_path: Path) -> None:
    async with harness(tmp_path, OWNERSHIP, ASYNC) as h:
        h.write("subtopics", [_stored("ownership", "Borrowing")])
        h.stub.queue(_reply(" LIFETIMES ", "Moves"), _reply("Futures", "Executors"))
        stats = await h.run(Stage.SUBTOPICS, subtopics_stage)
        prompts = [r.prompt or "" for r in h.stub.completions]
    assert h.subtopics() == [
        _stored("ownership", "Borrowing"),
        Subtopic("f778dd3965d335968c02675f354198c2", "ownership", "LIFETIMES"),
        _stored("ownership", "Moves"),
        _stored("async", "Futures"),
        _stored("async", "Executors"),
    ]
    assert 'the topic "ownership"' in prompts[0]
    assert "Topic description: Rust memory" in prompts[0]
    assert "List 2 distinct" in prompts[0]
    assert "Reply with a JSON array of 2 strings and nothing else." in prompts[0]
    assert "Topic description" not in prompts[1]
    assert (stats.done, stats.skipped, stats.usage) == (2, 0, Usage(200, 100))
    assert [(e.id, e.usage) for e in h.done_events()] == [
        ("ownership", Usage(100, 50)),
        ("async", Usage(100, 50)),
    ]
    assert h.lines == [
        "subtopics: 2 done, 0 skipped, 0 failed, 0 excluded; tokens 200 in, 100 out; cost $0.0004"
    ]


async def test_full_topics_are_skipped_without_a_request(tmp_path: Path) -> None:
    async with harness(tmp_path, OWNERSHIP, ASYNC) as h:
        h.write("subtopics", [_stored("async", "Futures"), _stored("async", "Pinning")])
        h.stub.queue(_reply("Borrowing", "Lifetimes", "Moves"))
        stats = await h.run(Stage.SUBTOPICS, subtopics_stage)
        assert len(h.stub.completions) == 1
    assert (stats.done, stats.skipped) == (1, 1)
    assert [e for e in h.recorder.events if isinstance(e, StageStarted)] == [
        StageStarted(Stage.SUBTOPICS, 1)
    ]
    assert [e.id for e in h.done_events()] == ["ownership"]


async def test_rejected_and_stored_names_are_never_stored_again(tmp_path: Path) -> None:
    async with harness(tmp_path, OWNERSHIP) as h:
        h.write("subtopics", [_stored("ownership", "Borrowing")])
        rejected = RejectedSubtopic(subtopic_id("ownership", "Unsafe"), "ownership", "Unsafe")
        elsewhere = RejectedSubtopic(subtopic_id("async", "Moves"), "async", "Moves")
        h.write_lines("rejected", [rejected.to_json(), elsewhere.to_json()])
        h.stub.queue(_reply("unsafe", "BORROWING", "Moves", "Lifetimes", "Traits"))
        stats = await h.run(Stage.SUBTOPICS, subtopics_stage)
    assert [s.name for s in h.subtopics()] == ["Borrowing", "Moves", "Lifetimes"]
    assert stats.done == 1


async def test_a_short_answer_is_asked_again_for_the_rest_in_the_same_run(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, OWNERSHIP) as h:
        h.stub.queue(_reply("Borrowing", "borrowing"), _reply("Borrowing", "Lifetimes", "Moves"))
        stats = await h.run(Stage.SUBTOPICS, subtopics_stage)
        prompts = [r.prompt or "" for r in h.stub.completions]
    assert stats.done == 1
    assert stats.usage == Usage(200, 100)
    assert [(e.id, e.usage, e.written) for e in h.done_events()] == [
        ("ownership", Usage(200, 100), 3)
    ]
    assert len(prompts) == 2
    assert "List 3 distinct" in prompts[0]
    assert "List 2 distinct" in prompts[1]
    assert [s.name for s in h.subtopics()] == ["Borrowing", "Lifetimes", "Moves"]


async def test_a_topic_left_short_counts_done_and_the_rerun_asks_for_the_rest(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, OWNERSHIP) as h:
        # One new name, then `max_retries` (2) answers with nothing new: the topic stops short.
        h.stub.queue(*[_reply("Borrowing", "borrowing")] * 3)
        first = await h.run(Stage.SUBTOPICS, subtopics_stage)
        h.stub.queue(_reply("Borrowing", "Lifetimes", "Moves"))
        second = await h.run(Stage.SUBTOPICS, subtopics_stage)
        prompts = [r.prompt or "" for r in h.stub.completions]
    assert (first.done, second.done) == (1, 1)
    assert len(prompts) == 4
    assert "List 2 distinct" in prompts[3]
    assert [s.name for s in h.subtopics()] == ["Borrowing", "Lifetimes", "Moves"]


async def test_force_replaces_only_the_selected_topics_subtopics(tmp_path: Path) -> None:
    async with harness(tmp_path, OWNERSHIP, ASYNC) as h:
        old = [_stored("ownership", f"Old {n}") for n in range(3)]
        other = [_stored("async", "Futures"), _stored("async", "Pinning")]
        h.write("subtopics", old + other)
        h.stub.queue(_reply("A", "B", "C"))
        stats = await h.run(Stage.SUBTOPICS, subtopics_stage, force=True, only=("ownership",))
    assert h.subtopics() == [*other, *(_stored("ownership", n) for n in "ABC")]
    assert (stats.done, stats.skipped) == (1, 0)


async def test_a_failed_topic_does_not_stop_the_next_one(tmp_path: Path) -> None:
    async with harness(tmp_path, OWNERSHIP, ASYNC) as h:
        h.stub.queue(*[Reply(content="no list")] * 3, _reply("Futures", "Executors"))
        with pytest.raises(StageItemsFailed, match=r"^1 subtopics item\(s\) failed; run the"):
            await h.run(Stage.SUBTOPICS, subtopics_stage)
    assert [s.topic for s in h.subtopics()] == ["async", "async"]
    assert h.failures()[-1] == (
        "ownership",
        "invalid response: no list of strings after all retries",
        False,
    )
    assert h.lines[0].startswith("subtopics: 1 done, 0 skipped, 1 failed, 0 excluded;")


async def test_a_fatal_error_stops_the_stage(tmp_path: Path) -> None:
    async with harness(tmp_path, OWNERSHIP, ASYNC) as h:
        # A 401 is fatal at once: not even asked again without structured output.
        h.stub.queue(*[Reply(status=401, body=b"{}")] * 2)
        with pytest.raises(StageStopped, match=r"^subtopics stopped: HTTP 401: authentication"):
            await h.run(Stage.SUBTOPICS, subtopics_stage)
        assert len(h.stub.completions) == 1
    assert not (tmp_path / "data" / "subtopics.jsonl").read_text()
