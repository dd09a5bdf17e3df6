"""The TUI's dataset edits stick: deletes and edits in a real terminal, then the real stages.

A generator that keeps offering what the user deleted (the stand-in provider, scripted) shows
that `overbrainer subtopics` and `overbrainer questions` leave it out, `--force` included; an
edit that gives a question a new ID makes `overbrainer answers` ask the new question.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from overbrainer.devtools.stub_model import default_reply
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.storage.ids import question_id, subtopic_id
from overbrainer.storage.records import (
    Example,
    Question,
    RejectedQuestion,
    RejectedSubtopic,
    rejected_from_json,
)
from tests.pipeline_support import make_project, overbrainer, read_examples
from tests.tui_support import Terminal, needs_tmux, open_terminal

pytestmark = needs_tmux

SUBTOPICS = {"ownership": ["Borrowing", "Lifetimes", "Moves", "Traits"], "async": ["Futures"]}
SUBTOPICS["async"] += ["Executors", "Pinning"]
FORMS = (
    "How does {} change when a value is shared?",
    "Why is {} checked at compile time?",
    "What breaks first in {} under heavy load?",
)
_TOPIC = re.compile(r'topic "([^"]+)"')
_SUBTOPIC = re.compile(r'subtopic "([^"]+)"')


def offered(name: str) -> list[str]:
    """The questions the generator offers on subtopic `name`, always in this order."""
    return [form.format(name) for form in FORMS]


def generator(request: Recorded) -> Reply:
    """A generator that offers the same names and questions every time (only those the prompt
    lists as existing are left out), the deleted ones first: the stages must refuse them."""
    prompt = request.prompt or ""
    subtopic = _SUBTOPIC.search(prompt)
    if subtopic is not None:
        items = [q for q in offered(subtopic.group(1)) if f"- {q}\n" not in prompt]
        return Reply(content=json.dumps(items), usage=(40, 30))
    topic = _TOPIC.search(prompt)
    if topic is not None and "subtopics" in prompt:
        return Reply(content=json.dumps(SUBTOPICS[topic.group(1)]), usage=(40, 30))
    return default_reply(request)  # an answer


def records(root: Path, name: str) -> list[dict[str, str]]:
    """The records of data/<name>.jsonl as JSON objects."""
    path = root / "data" / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def names(root: Path, topic: str) -> list[str]:
    """The stored subtopic names of `topic`."""
    return [s["name"] for s in records(root, "subtopics") if s["topic"] == topic]


def texts(root: Path, subtopic: str) -> list[str]:
    """The stored question texts of subtopic `subtopic` (of topic ownership)."""
    sid = subtopic_id("ownership", subtopic)
    return [q["text"] for q in records(root, "questions") if q["subtopic_id"] == sid]


async def run(root: Path, url: str, *args: str) -> list[str]:
    """`overbrainer ARGS` on the stand-in: it succeeds; its stdout and stderr lines."""
    result = await overbrainer(root, *args, url=url)
    assert result.code == 0, result.stderr
    return result.out_lines + result.stderr.splitlines()


async def quit_tui(term: Terminal) -> None:
    """`q`, and the TUI exits 0."""
    await term.keys("q")
    assert "EXIT=0" in await term.wait_for("EXIT=")


async def test_deleted_subtopics_and_questions_never_come_back_from_the_stages(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub(generator) as stub:
        await run(root, stub.url, "questions")
        assert names(root, "ownership") == ["Borrowing", "Lifetimes"]
        assert texts(root, "Lifetimes") == offered("Lifetimes")[:2]
        borrowing = subtopic_id("ownership", "Borrowing")
        lifetimes = subtopic_id("ownership", "Lifetimes")
        gone = question_id(lifetimes, offered("Lifetimes")[0])

        async with open_terminal(root, "tui", size=(120, 30)) as term:
            await term.wait_for("nothing run yet")
            await term.keys("2")
            await term.wait_for("ownership  (2 subtopics)")
            await term.keys("Down", "d")
            await term.wait_for(f"delete subtopic {borrowing}? y deletes it")
            await term.keys("y")
            await term.wait_for(f"deleted subtopic {borrowing} (and 2 questions), now rejected")
            await term.wait_for("ownership  (1 subtopics)")
            await term.keys("Down", "d")
            await term.wait_for(f"delete question {gone}? y deletes it")
            await term.keys("y")
            await term.wait_for(f"deleted question {gone}, now rejected")
            await term.wait_for("Lifetimes  (1 questions)")
            await quit_tui(term)
        assert [rejected_from_json(json.dumps(r)) for r in records(root, "rejected")] == [
            RejectedSubtopic(borrowing, "ownership", "Borrowing"),
            RejectedQuestion(gone, "ownership", lifetimes, offered("Lifetimes")[0]),
        ]

        await run(root, stub.url, "subtopics")
        assert names(root, "ownership") == ["Lifetimes", "Moves"]  # Borrowing was offered first
        await run(root, stub.url, "subtopics", "--force")
        assert names(root, "ownership") == ["Lifetimes", "Moves"]

        asked = len(stub.completions)
        said = await run(root, stub.url, "questions")
        # Lifetimes is one short; the generator offers only the deleted question for it.
        assert "subtopic `Lifetimes`: stopped at 1 of 2 questions" in "\n".join(said)
        assert any('subtopic "Lifetimes"' in (r.prompt or "") for r in stub.completions[asked:])
        assert texts(root, "Lifetimes") == [offered("Lifetimes")[1]]
        assert texts(root, "Moves") == offered("Moves")[:2]
        assert texts(root, "Borrowing") == []
        await run(root, stub.url, "questions", "--force", "--topic", "ownership")
        assert texts(root, "Lifetimes") == [offered("Lifetimes")[1]]
        assert texts(root, "Moves") == offered("Moves")[:2]


EDITOR = """#!/bin/sh
case "$1" in
  *questions-*) sed -i 's/"text": ".*"/"text": "{question}"/' "$1" ;;
  *subtopics-*) sed -i 's/"name": ".*"/"name": "{subtopic}"/' "$1" ;;
esac
"""


async def test_an_edited_question_is_asked_again_and_a_renamed_subtopic_keeps_its_answers(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    new_text = "What does a shared borrow forbid?"
    editor = tmp_path / "editor.sh"
    editor.write_text(EDITOR.format(question=new_text, subtopic="Ownership rules"))
    editor.chmod(0o755)
    async with open_stub(generator) as stub:
        await run(root, stub.url, "questions")
        await run(root, stub.url, "answers")
        before = read_examples(root)
        assert len(before) == 8
        borrowing = subtopic_id("ownership", "Borrowing")
        old = question_id(borrowing, offered("Borrowing")[0])
        new = question_id(borrowing, new_text)
        lifetimes = subtopic_id("ownership", "Lifetimes")
        renamed = subtopic_id("ownership", "Ownership rules")

        env = {"VISUAL": str(editor)}
        async with open_terminal(root, "tui", env=env, size=(160, 30)) as term:
            await term.wait_for("nothing run yet")
            await term.keys("2")
            await term.wait_for("ownership  (2 subtopics)")
            await term.keys("Down", "Down", "e")
            await term.wait_for(
                f"question {old} edited: new id {new}, "
                "its answer dropped (overbrainer answers asks again)"
            )
            await term.wait_for(f"▶ {new_text}")  # the selection follows its new ID
            assert old not in {e.id for e in read_examples(root)}
            await term.keys("Down", "e")  # the new question, last of its subtopic, has no answer
            await term.wait_for(
                f"subtopic {lifetimes} edited: new id {renamed}, re-keyed 2 questions, 2 answers"
            )
            await term.wait_for("▶ Ownership rules  (2 questions)")
            await quit_tui(term)

        questions = [Question.from_json(json.dumps(q)) for q in records(root, "questions")]
        assert {q.id for q in questions if q.subtopic_id == renamed} == {
            question_id(renamed, text) for text in offered("Lifetimes")[:2]
        }
        assert lifetimes not in {q.subtopic_id for q in questions}
        said = await run(root, stub.url, "answers")
        assert said[0].startswith("answers: 1 done, 7 skipped, 0 failed")
        after = {e.id: e for e in read_examples(root)}
        assert set(after) == {q.id for q in questions}
        asked: Example = after[new]
        assert [m.content for m in asked.messages if m.role == "user"] == [new_text]
        assert asked.messages[-1].content == f"Here is a careful answer to: {new_text}"
        kept = {e.messages[-1].content for e in before if e.id != old}
        assert {e.messages[-1].content for e in after.values() if e.id != new} == kept
        said = await run(root, stub.url, "questions")
        assert said[0].startswith("questions: 0 done, 4 skipped")  # re-keyed: still full
