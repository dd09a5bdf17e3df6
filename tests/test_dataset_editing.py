"""Editing the dataset one record at a time (the TUI's Dataset view), on real data files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from overbrainer.model.errors import UsageError
from overbrainer.model.finish import FinishReason, ReasoningKind
from overbrainer.pipeline import dataset_files, editing, rekeying
from overbrainer.pipeline.editing import delete_record, record_text, replace_record
from overbrainer.project.directory import open_project
from overbrainer.storage.ids import question_id, subtopic_id
from overbrainer.storage.records import (
    Example,
    Message,
    Meta,
    Question,
    RejectedQuestion,
    RejectedSubtopic,
    Subtopic,
    rejected_from_json,
)
from tests.pipeline_support import make_project, write_answered

# The reference's pinned IDs (spec §2.1).
BORROWING = "d410fa975affdd150daf206922cfd8cc"
A_BORROW = "2b7f16567ded37292cec9b2ae9726e6a"


def lines(root: Path, name: str) -> list[str]:
    """The lines of data/<name>.jsonl (none when it is missing)."""
    path = root / "data" / f"{name}.jsonl"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def first(root: Path, name: str) -> str:
    """The ID of the first record of data/<name>.jsonl."""
    return str(json.loads(lines(root, name)[0])["id"])


def questions(root: Path) -> list[Question]:
    """The records of data/questions.jsonl."""
    return [Question.from_json(line) for line in lines(root, "questions")]


def answers(root: Path) -> list[Example]:
    """The records of data/answers.jsonl."""
    return [Example.from_json(line) for line in lines(root, "answers")]


def rejected(root: Path) -> list[RejectedSubtopic | RejectedQuestion]:
    """The records of data/rejected.jsonl."""
    return [rejected_from_json(line) for line in lines(root, "rejected")]


def edited(record: Subtopic | Question | Example, **changes: str) -> str:
    """`record` as the user saves it from the editor: pretty JSON, with `changes`."""
    return json.dumps(json.loads(record.to_json()) | changes, indent=2)


def lifetimes_project(tmp_path: Path) -> Path:
    """Topic ownership, subtopic Lifetimes: two answered questions, one rejected question,
    and a subtopic Moves with one answered question."""
    root = make_project(tmp_path / "p")
    meta = Meta("parent-model", 41, 812, FinishReason.STOP, ReasoningKind.RAW)
    data = root / "data"
    data.mkdir()
    subs = [Subtopic(subtopic_id("ownership", n), "ownership", n) for n in ("Lifetimes", "Moves")]
    texts = [(subs[0], "What is a borrow in Rust?"), (subs[0], "Why do lifetimes exist?")]
    texts.append((subs[1], "What does a move do?"))
    asked = [Question(question_id(s.id, t), s.topic, s.id, s.name, t) for s, t in texts]
    said = [
        Example(
            q.id,
            q.topic,
            q.subtopic,
            (Message("user", q.text), Message("assistant", f"About: {q.text}")),
            meta,
        )
        for q in asked
    ]
    text = "Is borrowing slow?"
    refused = RejectedQuestion(question_id(subs[0].id, text), "ownership", subs[0].id, text)
    for name, records in (
        ("subtopics", subs),
        ("questions", asked),
        ("answers", said),
        ("rejected", [refused]),
    ):
        (data / f"{name}.jsonl").write_text("".join(r.to_json() + "\n" for r in records))
    return root


def test_an_edit_of_the_same_normalized_text_keeps_the_id_and_updates_the_answer(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    write_answered(root, 20)
    project = open_project(root)
    before = lines(root, "questions")
    question = Question.from_json(before[3])
    text = record_text(project, "questions", question.id)
    assert text.startswith("{\n  ")
    assert json.loads(text) == json.loads(before[3])
    shouted = "  " + question.text.upper().replace(" ", "\t ")
    edit = replace_record(project, "questions", question.id, edited(question, text=shouted))
    assert (edit.new_id, edit.changed) == (question.id, True)
    assert edit.line == f"question {question.id} edited: same id, its answer's user message updated"
    after = lines(root, "questions")
    assert sorted(after) == sorted(
        [*before[:3], *before[4:], attrs.evolve(question, text=shouted).to_json()]
    )
    answer = next(a for a in answers(root) if a.id == question.id)
    assert [m.content for m in answer.messages if m.role == "user"] == [shouted]
    assert len(answers(root)) == 20
    again = replace_record(
        project, "questions", question.id, record_text(project, "questions", question.id)
    )
    assert (again.changed, again.line) == (False, f"question {question.id} unchanged")


def test_a_question_edited_to_new_text_gets_the_computed_id_and_loses_its_answer(
    tmp_path: Path,
) -> None:
    root = lifetimes_project(tmp_path)
    project = open_project(root)
    before = questions(root)
    old = before[1]
    edit = replace_record(
        project, "questions", old.id, edited(old, text="What is a borrow in Rust, really?")
    )
    new_id = question_id(old.subtopic_id, "What is a borrow in Rust, really?")
    assert edit.new_id == new_id
    assert edit.line == (
        f"question {old.id} edited: new id {new_id}, "
        "its answer dropped (overbrainer answers asks again)"
    )
    assert [q.id for q in questions(root)] == [before[0].id, before[2].id, new_id]
    assert questions(root)[-1] == attrs.evolve(
        old, id=new_id, text="What is a borrow in Rust, really?"
    )
    assert {a.id for a in answers(root)} == {q.id for q in questions(root)} - {new_id}


def test_a_question_without_an_answer_says_only_its_new_id(tmp_path: Path) -> None:
    root = lifetimes_project(tmp_path)
    project = open_project(root)
    old = questions(root)[0]
    delete_record(project, "answers", old.id)
    edit = replace_record(project, "questions", old.id, edited(old, text="A new question?"))
    assert (
        edit.line
        == f"question {old.id} edited: new id {question_id(old.subtopic_id, 'A new question?')}"
    )


@pytest.mark.parametrize(
    ("name", "index", "change", "problem"),
    [
        ("questions", 0, "{not json", "the edited question is not valid: not JSON"),
        ("questions", 0, '{"id": "x"}', "the edited question is not valid: "),
        ("questions", 0, {"subtopic": "Moves"}, "the edited question changes its subtopic: "),
        ("questions", 0, {"topic": "async"}, "the edited question changes its topic: only its"),
        ("questions", 0, {"text": " \t"}, "the edited question has an empty text"),
        ("questions", 1, {"text": "what is a BORROW in rust?"}, "the edited question has the "),
        ("subtopics", 0, {"topic": "async"}, "the edited subtopic changes its topic: only its"),
        ("subtopics", 0, {"name": "MOVES"}, "the edited subtopic has the name of subtopic "),
        ("subtopics", 0, {"name": ""}, "the edited subtopic has an empty name"),
    ],
)
def test_an_invalid_edit_changes_nothing(
    tmp_path: Path, name: str, index: int, change: str | dict[str, str], problem: str
) -> None:
    root = lifetimes_project(tmp_path)
    project = open_project(root)
    files = {n: lines(root, n) for n in ("subtopics", "questions", "answers", "rejected")}
    record = dataset_files.stored(project, name)[index]
    text = change if isinstance(change, str) else edited(record, **change)
    with pytest.raises(UsageError) as raised:
        replace_record(project, name, record.id, text)
    assert raised.value.message.startswith(problem)
    assert {n: lines(root, n) for n in files} == files


def test_an_id_changed_by_hand_is_refused_even_with_new_text(tmp_path: Path) -> None:
    root = lifetimes_project(tmp_path)
    project = open_project(root)
    before = lines(root, "questions")
    old = questions(root)[0]
    typed = question_id(old.subtopic_id, "Typed?")
    with pytest.raises(UsageError) as raised:
        replace_record(project, "questions", old.id, edited(old, id=typed, text="Typed?"))
    assert raised.value.message == f"the edited question changes its id: it must stay {old.id}"
    assert lines(root, "questions") == before


def test_an_answer_edit_may_not_change_the_id(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_answered(root, 5)
    project = open_project(root)
    before = lines(root, "answers")
    answer = json.loads(before[0])
    with pytest.raises(UsageError) as raised:
        replace_record(project, "answers", answer["id"], json.dumps(answer | {"id": "0" * 32}))
    assert raised.value.message == (
        f"the edited answer changes its id: it must stay {answer['id']}"
    )
    assert lines(root, "answers") == before


def test_renaming_a_subtopic_the_same_normalized_way_keeps_every_id(tmp_path: Path) -> None:
    root = lifetimes_project(tmp_path)
    project = open_project(root)
    sub = Subtopic.from_json(lines(root, "subtopics")[0])
    ids = {n: [json.loads(line)["id"] for line in lines(root, n)] for n in ("questions", "answers")}
    edit = replace_record(project, "subtopics", sub.id, edited(sub, name=" LIFETIMES "))
    assert edit.line == (
        f"subtopic {sub.id} edited: same id, its name updated in 2 questions, 2 answers"
    )
    assert edit.new_id == sub.id
    assert {n: sorted(json.loads(line)["id"] for line in lines(root, n)) for n in ids} == {
        n: sorted(found) for n, found in ids.items()
    }
    assert [q.subtopic for q in questions(root) if q.subtopic_id == sub.id] == [" LIFETIMES "] * 2
    assert sorted(a.subtopic for a in answers(root)) == [" LIFETIMES ", " LIFETIMES ", "Moves"]


def test_renaming_a_subtopic_rekeys_its_questions_answers_and_rejected_questions(
    tmp_path: Path,
) -> None:
    root = lifetimes_project(tmp_path)
    project = open_project(root)
    sub = Subtopic.from_json(lines(root, "subtopics")[0])
    moves = Subtopic.from_json(lines(root, "subtopics")[1])
    untouched = [q for q in questions(root) if q.subtopic_id == moves.id]
    edit = replace_record(project, "subtopics", sub.id, edited(sub, name="Borrowing"))
    assert edit.new_id == BORROWING
    assert edit.line == (
        f"subtopic {sub.id} edited: new id {BORROWING}, "
        "re-keyed 2 questions, 2 answers, 1 rejected question"
    )
    assert [Subtopic.from_json(line) for line in lines(root, "subtopics")] == [
        moves,
        Subtopic(BORROWING, "ownership", "Borrowing"),
    ]
    mine = [q for q in questions(root) if q.subtopic_id == BORROWING]
    assert [(q.id, q.subtopic, q.text) for q in mine] == [
        (A_BORROW, "Borrowing", "What is a borrow in Rust?"),
        (question_id(BORROWING, "Why do lifetimes exist?"), "Borrowing", "Why do lifetimes exist?"),
    ]
    assert [q for q in questions(root) if q.subtopic_id != BORROWING] == untouched
    said = {a.id: a for a in answers(root)}
    assert set(said) == {q.id for q in questions(root)}
    assert said[A_BORROW].subtopic == "Borrowing"
    assert said[A_BORROW].messages[-1].content == "About: What is a borrow in Rust?"
    text = "Is borrowing slow?"
    assert rejected(root) == [
        RejectedQuestion(question_id(BORROWING, text), "ownership", BORROWING, text)
    ]


def writes_then_crash(monkeypatch: pytest.MonkeyPatch, allowed: int) -> Callable[[], int]:
    """Let the edit's first `allowed` file writes happen, then stop it as a crash would."""
    done = [0]
    real = {name: getattr(dataset_files, name) for name in ("add", "drop")}

    def counting(name: str) -> Callable[..., None]:
        def write(*args: object) -> None:
            if done[0] == allowed:
                raise KeyboardInterrupt  # nothing after this write happens, as after a crash
            real[name](*args)
            done[0] += 1

        return write

    for module in (dataset_files, editing, rekeying):
        for name in real:
            if hasattr(module, name):
                monkeypatch.setattr(module, name, counting(name))
    return lambda: done[0]


def consistent(root: Path) -> None:
    """Each answer has its question, and each question (stored or rejected) its subtopic."""
    subtopics = {Subtopic.from_json(line).id for line in lines(root, "subtopics")}
    asked = questions(root)
    assert {a.id for a in answers(root)} <= {q.id for q in asked}
    assert {q.subtopic_id for q in asked} <= subtopics
    refused = [r for r in rejected(root) if isinstance(r, RejectedQuestion)]
    # A rejected question of the subtopic stays rejected under its old or its new ID.
    assert any(r.text == "Is borrowing slow?" and r.subtopic_id in subtopics for r in refused)


@pytest.mark.parametrize("allowed", range(8))
def test_a_rename_stopped_after_any_write_leaves_every_answer_its_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, allowed: int
) -> None:
    root = lifetimes_project(tmp_path)
    project = open_project(root)
    sub = Subtopic.from_json(lines(root, "subtopics")[0])
    writes = writes_then_crash(monkeypatch, allowed)
    with pytest.raises(KeyboardInterrupt):
        replace_record(project, "subtopics", sub.id, edited(sub, name="Borrowing"))
    assert writes() == allowed
    consistent(root)


@pytest.mark.parametrize("allowed", range(3))
def test_a_question_edit_stopped_after_any_write_leaves_no_answer_without_its_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, allowed: int
) -> None:
    root = lifetimes_project(tmp_path)
    project = open_project(root)
    old = questions(root)[0]
    writes = writes_then_crash(monkeypatch, allowed)
    with pytest.raises(KeyboardInterrupt):
        replace_record(project, "questions", old.id, edited(old, text="A new question?"))
    assert writes() == allowed
    consistent(root)


def test_deleting_a_question_deletes_its_answer_and_rejects_it(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_answered(root, 20)
    project = open_project(root)
    before, said = lines(root, "questions"), lines(root, "answers")
    gone = Question.from_json(before[0])
    deleted = delete_record(project, "questions", gone.id)
    assert deleted.line("questions", gone.id) == (
        f"deleted question {gone.id} (and 1 answer), now rejected"
    )
    assert lines(root, "questions") == before[1:]
    assert lines(root, "answers") == [a for a in said if Example.from_json(a).id != gone.id]
    assert len(lines(root, "answers")) == len(said) - 1
    assert lines(root, "rejected") == [
        f'{{"kind":"question","id":"{gone.id}","topic":"ownership",'
        f'"subtopic_id":"{gone.subtopic_id}","text":"{gone.text}"}}'
    ]


def test_deleting_a_subtopic_deletes_its_questions_and_answers_and_rejects_it_alone(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    write_answered(root, 20)
    project = open_project(root)
    sub = Subtopic.from_json(lines(root, "subtopics")[0])
    asked = {q.id for q in questions(root) if q.subtopic_id == sub.id}
    assert asked
    deleted = delete_record(project, "subtopics", sub.id)
    assert deleted.questions == len(asked)
    assert deleted.line("subtopics", sub.id) == (
        f"deleted subtopic {sub.id} (and 2 questions, 2 answers), now rejected"
    )
    assert sub.id not in {Subtopic.from_json(s).id for s in lines(root, "subtopics")}
    assert not {q.id for q in questions(root)} & asked
    assert not {a.id for a in answers(root)} & asked
    assert rejected(root) == [RejectedSubtopic(sub.id, "ownership", sub.name)]


def test_deleting_an_answer_keeps_its_question_rejects_nothing_and_a_gone_record_is_named(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    write_answered(root, 5)
    project = open_project(root)
    before = lines(root, "questions")
    gone = first(root, "answers")
    assert delete_record(project, "answers", gone).line("answers", gone) == (
        f"deleted answer {gone}"
    )
    assert lines(root, "questions") == before
    assert lines(root, "rejected") == []
    with pytest.raises(UsageError) as raised:
        delete_record(project, "answers", gone)
    assert raised.value.message == f"answer {gone} is no longer in data/answers.jsonl"


def test_the_rejection_is_stored_before_anything_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = lifetimes_project(tmp_path)
    project = open_project(root)
    question = questions(root)[0]
    before = {n: lines(root, n) for n in ("questions", "answers")}
    writes_then_crash(monkeypatch, 1)
    with pytest.raises(KeyboardInterrupt):
        delete_record(project, "questions", question.id)
    assert {n: lines(root, n) for n in before} == before  # still stored, and already rejected
    assert rejected(root)[-1] == RejectedQuestion(
        question.id, "ownership", question.subtopic_id, question.text
    )
    monkeypatch.undo()
    delete_record(project, "questions", question.id)  # done again after the "crash"
    assert [r.id for r in rejected(root)].count(question.id) == 1
    assert question.id not in {q.id for q in questions(root)}
