"""Helpers for the `--force` tests: old records on disk, and a watcher that checks them live."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
import trio

from overbrainer.devtools.stub_model import default_reply
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.model.finish import FinishReason, ReasoningKind
from overbrainer.storage.ids import question_id, subtopic_id
from overbrainer.storage.records import Example, Message, Meta, Question, Subtopic

OLD = "an old answer"


def old_answers(root: Path, questions: Sequence[Question]) -> list[str]:
    """Store an old answer (content `OLD`) for each question; their lines."""
    meta = Meta("parent-model", 10, 5, FinishReason.STOP, ReasoningKind.RAW)
    lines = [
        Example(
            q.id,
            q.topic,
            q.subtopic,
            (Message("user", q.text), Message("assistant", OLD, "old thoughts")),
            meta,
        ).to_json()
        for q in questions
    ]
    (root / "data" / "answers.jsonl").write_text("".join(line + "\n" for line in lines))
    return lines


def old_questions(root: Path, topics: Sequence[str], per_topic: int = 2, per_sub: int = 2) -> None:
    """`per_topic` old subtopics per topic, each with `per_sub` old questions."""
    subtopics = [
        Subtopic(subtopic_id(topic, f"Old part {n}"), topic, f"Old part {n}")
        for topic in topics
        for n in range(per_topic)
    ]
    questions = [
        Question(question_id(s.id, f"Old question {k} on {s.name}?"), s.topic, s.id, s.name, text)
        for s in subtopics
        for k in range(per_sub)
        for text in [f"Old question {k} on {s.name}?"]
    ]
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "subtopics.jsonl").write_text("".join(s.to_json() + "\n" for s in subtopics))
    (data / "questions.jsonl").write_text("".join(q.to_json() + "\n" for q in questions))


def whole_lines(path: Path) -> list[str]:
    """The complete lines of a file (a torn last line, mid-write, is left out)."""
    data = path.read_bytes() if path.exists() else b""
    return data[: data.rfind(b"\n") + 1].decode().splitlines()


def delayed(seconds: float) -> Callable[[Recorded], Reply]:
    """The stub's default replies, each after `seconds`."""

    def reply(request: Recorded) -> Reply:
        return attrs.evolve(default_reply(request), delay=seconds)

    return reply


@attrs.define
class Watcher:
    """Checks `check()` over and over while a command runs; keeps the first failure."""

    check: Callable[[], str | None]
    rounds: int = 0
    failure: str | None = None

    async def run(self) -> None:
        """Check every few milliseconds until cancelled."""
        while True:
            problem = self.check()
            self.rounds += 1
            if problem is not None and self.failure is None:
                self.failure = problem
            await trio.sleep(0.005)


def force_state(root: Path, stage: str) -> dict[str, object] | None:
    """The decoded `.overbrainer/force-<stage>.json`, or None."""
    path = root / ".overbrainer" / f"force-{stage}.json"
    return json.loads(path.read_text()) if path.exists() else None
