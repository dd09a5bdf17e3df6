"""Stage `questions` in process against the stub: batches, stalls, seeding, dedup, embeddings."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from overbrainer.config.settings import Pipeline, Topic
from overbrainer.devtools.stub_model import default_embedding
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.events.types import Stage, StageStarted
from overbrainer.model.usage import Usage
from overbrainer.pipeline.engine import StageItemsFailed
from overbrainer.pipeline.questions import questions_stage
from overbrainer.storage.ids import question_id, subtopic_id
from overbrainer.storage.records import Question, RejectedQuestion, Subtopic
from tests.generator_harness import Harness, harness

RUST = Topic("rust", subtopics=2, questions_per_subtopic=3)
GO = Topic("go", subtopics=1, questions_per_subtopic=2)
BORROWING = Subtopic(subtopic_id("rust", "Borrowing"), "rust", "Borrowing")
LIFETIMES = Subtopic(subtopic_id("rust", "Lifetimes"), "rust", "Lifetimes")
CHANNELS = Subtopic(subtopic_id("go", "Channels"), "go", "Channels")


def _reply(*texts: str) -> Reply:
    return Reply(content=json.dumps(list(texts)), usage=(100, 50))


def _question(subtopic: Subtopic, text: str) -> Question:
    return Question(
        question_id(subtopic.id, text), subtopic.topic, subtopic.id, subtopic.name, text
    )


def _prompts(h: Harness) -> list[str]:
    return [r.prompt or "" for r in h.stub.completions]


async def test_a_repeating_generator_stalls_after_patience_batches(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    topic = Topic("rust", subtopics=1, questions_per_subtopic=3)
    pipeline = Pipeline(question_batch_size=2, max_retries=2)
    async with harness(tmp_path, topic, pipeline=pipeline) as h:
        h.write("subtopics", [BORROWING])
        h.stub.queue(*[_reply("What is a borrow?", "Why borrow?")] * 3)
        with caplog.at_level(logging.WARNING):
            stats = await h.run(Stage.QUESTIONS, questions_stage)
        assert len(h.stub.completions) == 3  # one productive batch, then two stalled ones
    assert h.questions() == [
        _question(BORROWING, "What is a borrow?"),
        _question(BORROWING, "Why borrow?"),
    ]
    assert (
        "subtopic `Borrowing`: stopped at 2 of 3 questions, the generator kept repeating itself"
        in caplog.messages
    )
    assert (stats.done, stats.usage) == (1, Usage(300, 150))
    assert [(e.id, e.usage) for e in h.done_events()] == [(BORROWING.id, Usage(300, 150))]


async def test_batches_ask_for_the_rest_and_list_what_was_accepted(tmp_path: Path) -> None:
    topic = Topic("rust", subtopics=1, questions_per_subtopic=3)
    pipeline = Pipeline(question_batch_size=2, max_retries=2)
    async with harness(tmp_path, topic, pipeline=pipeline) as h:
        h.write("subtopics", [BORROWING])
        h.stub.queue(
            _reply("What is a borrow?", "How long does a borrow last?", "Ignored extra?"),
            _reply("Can a borrow outlive its owner?"),
        )
        stats = await h.run(Stage.QUESTIONS, questions_stage)
        prompts = _prompts(h)
    assert [q.text for q in h.questions()] == [
        "What is a borrow?",
        "How long does a borrow last?",
        "Can a borrow outlive its owner?",
    ]
    assert 'topic "rust", subtopic "Borrowing"' in prompts[0]
    assert "Write 2 new questions" in prompts[0]
    assert "These questions exist already" not in prompts[0]
    assert "Write 1 new questions" in prompts[1]
    assert "- What is a borrow?\n- How long does a borrow last?\n" in prompts[1]
    assert stats.done == 1


async def test_the_topic_dedup_is_seeded_with_stored_and_rejected_questions(
    tmp_path: Path,
) -> None:
    # One slot at a time, so the scripted replies go to the subtopics in file order.
    async with harness(tmp_path, RUST, pipeline=Pipeline(concurrency=1, max_retries=2)) as h:
        h.write("subtopics", [BORROWING, LIFETIMES])
        h.write("questions", [_question(LIFETIMES, "What is a lifetime?")])
        rejected = RejectedQuestion("x", "rust", BORROWING.id, "Is borrowing slow?")
        h.write_lines("rejected", [rejected.to_json()])
        h.stub.queue(
            # Borrowing: variants of the other subtopic's question and of the rejected one.
            _reply("what is a LIFETIME", "Is borrowing slow!", "What is a borrow?"),
            _reply("Who owns a borrowed value?", "When does a borrow end?"),
            # Lifetimes (1 of 3): Borrowing's question is a duplicate in the topic too; only
            # the first 2 candidates of a batch of 2 count.
            _reply("What is a borrow?", "What does 'static mean?", "Why elide lifetimes?"),
            _reply("Why elide lifetimes?"),
        )
        stats = await h.run(Stage.QUESTIONS, questions_stage)
        prompts = _prompts(h)
    assert [(q.subtopic, q.text) for q in h.questions()] == [
        ("Lifetimes", "What is a lifetime?"),
        ("Borrowing", "What is a borrow?"),
        ("Borrowing", "Who owns a borrowed value?"),
        ("Borrowing", "When does a borrow end?"),
        ("Lifetimes", "What does 'static mean?"),
        ("Lifetimes", "Why elide lifetimes?"),
    ]
    # A subtopic's prompt lists only its own accepted questions.
    assert "These questions exist already" not in prompts[0]
    assert "- What is a lifetime?\n" in prompts[2]
    assert "What is a borrow?" not in prompts[2]
    assert (stats.done, len(prompts)) == (2, 4)


async def test_full_subtopics_are_skipped_and_full_topics_not_seeded(tmp_path: Path) -> None:
    async with harness(tmp_path, RUST, GO, embedder=True) as h:
        h.write("subtopics", [BORROWING, LIFETIMES, CHANNELS])
        full = [_question(BORROWING, f"Borrow question {n}?") for n in range(3)]
        go = [_question(CHANNELS, "What is a channel?"), _question(CHANNELS, "Why select?")]
        h.write("questions", full + go)
        h.stub.queue(_reply("What is a lifetime?", "Why do lifetimes exist?", "What is 'static?"))
        stats = await h.run(Stage.QUESTIONS, questions_stage)
        embedded = [r.body_json for r in h.stub.requests if r.path.endswith("/embeddings")]
    assert [e for e in h.recorder.events if isinstance(e, StageStarted)] == [
        StageStarted(Stage.QUESTIONS, 3)
    ]
    assert (stats.done, stats.skipped) == (1, 2)
    assert {(e.id, e.usage) for e in h.done_events()} == {
        (BORROWING.id, None),
        (CHANNELS.id, None),
        (LIFETIMES.id, Usage(100, 50)),
    }
    # rust is seeded (its 3 stored questions) then its batch is embedded; go is never embedded.
    assert [body["input"] for body in embedded if isinstance(body, dict)] == [
        [q.text for q in full],
        ["What is a lifetime?", "Why do lifetimes exist?", "What is 'static?"],
    ]


async def test_the_embedding_layer_drops_reworded_duplicates(tmp_path: Path) -> None:
    topic = Topic("rust", subtopics=1, questions_per_subtopic=3)
    async with harness(tmp_path, topic, embedder=True) as h:
        h.write("subtopics", [BORROWING])
        h.write("questions", [_question(BORROWING, "How does the borrow checker work?")])
        # Same words in another order: new bigrams, but the stub's bag-of-words vector is equal.
        h.stub.queue(
            _reply("The borrow checker: how does work?", "What is a mutable borrow?"),
            _reply("Why are borrows checked at compile time?"),
        )
        await h.run(Stage.QUESTIONS, questions_stage)
    assert [q.text for q in h.questions()] == [
        "How does the borrow checker work?",
        "What is a mutable borrow?",
        "Why are borrows checked at compile time?",
    ]
    assert default_embedding("The borrow checker: how does work?") == default_embedding(
        "How does the borrow checker work?"
    )


async def test_a_failed_seeding_fails_the_topic_and_skips_its_subtopics(tmp_path: Path) -> None:
    async with harness(tmp_path, RUST, GO, embedder=True) as h:
        h.write("subtopics", [BORROWING, LIFETIMES, CHANNELS])
        h.write("questions", [_question(BORROWING, "What is a borrow?")])

        def embedder(text: str) -> list[float]:
            if text == "What is a borrow?":
                raise RuntimeError("the embeddings endpoint is down")
            return default_embedding(text)

        h.stub.embedder = embedder
        h.stub.queue(_reply("What is a channel?", "Why select?"))
        with pytest.raises(StageItemsFailed, match=r"^1 questions item\(s\) failed"):
            await h.run(Stage.QUESTIONS, questions_stage)
    assert [q.text for q in h.questions()] == [
        "What is a borrow?",
        "What is a channel?",
        "Why select?",
    ]
    assert [(f[0], f[2]) for f in h.failures()] == [("rust", False)]
    assert h.lines[0].startswith("questions: 1 done, 0 skipped, 1 failed, 0 excluded;")


async def test_a_failed_slot_does_not_stop_the_others(tmp_path: Path) -> None:
    def respond(request: Recorded) -> Reply:
        if "Borrowing" in (request.prompt or ""):
            return Reply(content="no list here")
        return _reply("What is a lifetime?", "Why lifetimes?", "What is 'static?")

    async with harness(tmp_path, RUST) as h:
        h.write("subtopics", [BORROWING, LIFETIMES])
        h.stub.responder = respond
        with pytest.raises(StageItemsFailed):
            await h.run(Stage.QUESTIONS, questions_stage)
    assert {q.subtopic for q in h.questions()} == {"Lifetimes"}
    assert [e.id for e in h.done_events()] == [LIFETIMES.id]
    assert h.failures()[-1] == (
        BORROWING.id,
        "invalid response: no list of strings after all retries",
        False,
    )


async def test_force_replaces_only_the_selected_topics_questions(tmp_path: Path) -> None:
    async with harness(tmp_path, RUST, GO) as h:
        h.write("subtopics", [BORROWING, CHANNELS])
        old = [_question(BORROWING, f"Old {n}?") for n in range(3)]
        go = [_question(CHANNELS, "What is a channel?"), _question(CHANNELS, "Why select?")]
        h.write("questions", old + go)
        h.stub.queue(_reply("New one?", "New two?", "New three?"))
        stats = await h.run(Stage.QUESTIONS, questions_stage, force=True, only=("rust",))
    assert [q.text for q in h.questions()] == [
        "What is a channel?",
        "Why select?",
        "New one?",
        "New two?",
        "New three?",
    ]
    assert stats.done == 1
