"""Editing the dataset one record at a time (the TUI's Dataset view), on real data files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from overbrainer.model.errors import UsageError
from overbrainer.pipeline.editing import delete_record, record_text, replace_record
from overbrainer.project.directory import open_project
from overbrainer.storage.records import Example, Question, Subtopic
from tests.pipeline_support import make_project, write_answered


def lines(root: Path, name: str) -> list[str]:
    """The lines of data/<name>.jsonl."""
    return (root / "data" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()


def first(root: Path, name: str) -> str:
    """The ID of the first record of data/<name>.jsonl."""
    return str(json.loads(lines(root, name)[0])["id"])


def test_edit_shows_one_record_and_replaces_it_alone(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_answered(root, 20)
    project = open_project(root)
    before = lines(root, "questions")
    question = Question.from_json(before[3])
    text = record_text(project, "questions", question.id)
    assert text.startswith("{\n  ")
    assert json.loads(text) == json.loads(before[3])
    edited = json.loads(text) | {"text": "What is a borrow, really?"}
    assert replace_record(project, "questions", question.id, json.dumps(edited, indent=2))
    after = lines(root, "questions")
    assert len(after) == len(before)
    assert sorted(after) == sorted(
        [*before[:3], *before[4:], Question.from_json(json.dumps(edited)).to_json()]
    )
    assert not replace_record(project, "questions", question.id, json.dumps(edited))


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ("{not json", "the edited question is not valid: not JSON"),
        ('{"id": "x"}', "the edited question is not valid: "),
    ],
)
def test_an_invalid_edit_changes_nothing(tmp_path: Path, change: str, problem: str) -> None:
    root = make_project(tmp_path / "p")
    write_answered(root, 5)
    project = open_project(root)
    before = lines(root, "questions")
    with pytest.raises(UsageError) as raised:
        replace_record(project, "questions", first(root, "questions"), change)
    assert raised.value.message.startswith(problem)
    assert lines(root, "questions") == before


def test_an_edit_may_not_change_the_id(tmp_path: Path) -> None:
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


def test_deleting_a_question_deletes_its_answer(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_answered(root, 20)
    project = open_project(root)
    questions, answers = lines(root, "questions"), lines(root, "answers")
    gone = first(root, "questions")
    deleted = delete_record(project, "questions", gone)
    assert deleted.line("questions", gone) == f"deleted question {gone} (and 1 answer)"
    assert lines(root, "questions") == questions[1:]
    assert lines(root, "answers") == [a for a in answers if Example.from_json(a).id != gone]
    assert len(lines(root, "answers")) == len(answers) - 1


def test_deleting_a_subtopic_deletes_its_questions_and_their_answers(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_answered(root, 20)
    project = open_project(root)
    sub = Subtopic.from_json(lines(root, "subtopics")[0])
    asked = {
        q.id for q in map(Question.from_json, lines(root, "questions")) if q.subtopic_id == sub.id
    }
    assert asked
    deleted = delete_record(project, "subtopics", sub.id)
    assert deleted.questions == len(asked)
    assert sub.id not in {Subtopic.from_json(s).id for s in lines(root, "subtopics")}
    left = {Question.from_json(q).id for q in lines(root, "questions")}
    assert not left & asked
    assert not {Example.from_json(a).id for a in lines(root, "answers")} & asked


def test_deleting_an_answer_keeps_its_question_and_a_gone_record_is_named(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    write_answered(root, 5)
    project = open_project(root)
    questions = lines(root, "questions")
    gone = first(root, "answers")
    assert delete_record(project, "answers", gone).line("answers", gone) == (
        f"deleted answer {gone}"
    )
    assert lines(root, "questions") == questions
    with pytest.raises(UsageError) as raised:
        delete_record(project, "answers", gone)
    assert raised.value.message == f"answer {gone} is no longer in data/answers.jsonl"
