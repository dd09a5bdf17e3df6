"""Resume reads only heads: the same lines, errors and "what is left" as the full reads."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from overbrainer.model.finish import FinishReason, ReasoningKind
from overbrainer.pipeline.answers import pending_questions, read_stored
from overbrainer.pipeline.answers_left import answers_left
from overbrainer.pipeline.engine import StageContext
from overbrainer.pipeline.quality import unscored_among, unscored_except, usable_answers
from overbrainer.pipeline.quality_scores import QualityScore, answer_sha, prompt_sha
from overbrainer.pipeline.questions_left import all_filled
from overbrainer.project.directory import Project
from overbrainer.storage import lines
from overbrainer.storage.errors import InvalidRecord
from overbrainer.storage.force_state import ForceState, save_force_state
from overbrainer.storage.heads import answer_heads, answer_ids, id_key, question_heads
from overbrainer.storage.jsonl import read_records
from overbrainer.storage.records import (
    Example,
    Exclusion,
    Message,
    Meta,
    Question,
    Subtopic,
    example_id,
)

TOPICS = ("alpha", "beta", 'say "hi"')
"""The last topic is escaped in JSON, so its lines take the full parse."""
IDS = [f"{n:032x}" for n in range(1, 9)] + ["Not-Hex-ID"]
FEW = [*IDS[:3], IDS[-1]]
"""The IDs drawn for a project: few, so that records of one ID often follow each other."""
MODEL, SOURCE = "judge-a", "Score this: {{ answer }}"


def question(record_id: str, topic: str) -> Question:
    return Question(record_id, topic, "5" * 32, "sub", f"What is {record_id}?")


def example(record_id: str, topic: str, excluded: Exclusion | None, text: str = "ok") -> Example:
    meta = Meta("parent", 3, 5, FinishReason.STOP, ReasoningKind.RAW, excluded)
    messages = (Message("user", "q?"), Message("assistant", text, "because"))
    return Example(record_id, topic, "sub", messages, meta)


def reordered(line: str) -> str:
    """The same record with its keys in another order (as a hand edit might leave it)."""
    return json.dumps(dict(reversed(list(json.loads(line).items()))), separators=(",", ":"))


def checked_text(line: str) -> str:
    """A line that is a valid answer, as it is."""
    Example.from_json(line)
    return line


def write(path: Path, lines: list[str], tail: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes("".join(line + "\n" for line in lines).encode() + tail.encode())


@pytest.fixture(params=[1 << 22, 64, 7], ids=["block", "small-block", "tiny-block"])
def block(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test also runs with lines straddling the blocks read."""
    monkeypatch.setattr(lines, "_READ_BLOCK", request.param)


@pytest.mark.usefixtures("block")
@pytest.mark.parametrize("tail", ["", '{"id":"00', "   ", "\x1c", "{}", "whole"])
def test_the_heads_are_the_full_reads_ids_with_blank_lines_and_a_torn_tail(
    tmp_path: Path, tail: str
) -> None:
    path = tmp_path / "answers.jsonl"
    ours = [example(IDS[n], TOPICS[n % 3], None).to_json() for n in range(6)]
    excluded = example(IDS[6], "beta", Exclusion.TRUNCATED).to_json()
    lines = [*ours[:2], "", "  ", "\x1c", reordered(ours[2]), *ours[3:], excluded]
    lines.append(example(IDS[8], "alpha", None, "é ünïcode").to_json())
    write(path, lines, ours[1] if tail == "whole" else tail)
    expected = read_records(path, example_id)
    assert [key for key, _, _, _ in answer_ids(path)] == [id_key(found) for found in expected]
    got = [head for head, _, _, _ in answer_heads(path)]
    full = [(id_key(e.id), e.topic, e.usable) for e in read_records(path, Example.from_json)]
    assert got == full
    views = [bytes(view[start:end]) for _, view, start, end in answer_heads(path)]
    assert [line.decode() for line in views] == read_records(path, checked_text)


@pytest.mark.usefixtures("block")
@pytest.mark.parametrize(
    "bad",
    [
        b'{"id":"x"}',
        b'{"id":"' + b"a" * 32 + b'","topic":"alpha","subtopic":"s"',
        b"\xff\xfe not utf-8",
        b'{"id":"' + b"a" * 32 + b'","topic":"alpha","subtopic":"\xff"}}',
    ],
)
def test_a_bad_line_is_the_same_error_as_the_full_read(tmp_path: Path, bad: bytes) -> None:
    path = tmp_path / "answers.jsonl"
    good = example(IDS[0], "alpha", None).to_json().encode()
    path.write_bytes(good + b"\n\n" + bad + b"\n" + good + b"\n")
    with pytest.raises(InvalidRecord) as full:
        read_records(path, example_id)
    with pytest.raises(InvalidRecord) as fast:
        list(answer_ids(path))
    assert str(fast.value) == str(full.value)
    assert str(fast.value).startswith(f"{path}:3: invalid record")


def test_a_torn_tail_that_does_not_parse_is_ignored_with_the_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "questions.jsonl"
    write(path, [question(IDS[0], "alpha").to_json()], '{"id":"0000')
    with caplog.at_level(logging.WARNING):
        assert [head for head, _, _, _ in question_heads(path)] == [(id_key(IDS[0]), "alpha")]
    assert f"{path}: ignoring an incomplete last line" in caplog.text


def test_a_missing_file_has_no_heads(tmp_path: Path) -> None:
    assert list(answer_heads(tmp_path / "missing.jsonl")) == []


# A project's stored lines: each entry is a question, an answer or a score, in file order.
entries = st.lists(
    st.tuples(
        st.sampled_from(["question", "answer", "score"]),
        st.sampled_from(FEW),
        st.sampled_from(TOPICS),
        st.sampled_from([None, None, Exclusion.EMPTY]),
        st.booleans(),  # reordered keys (the full parse) / another judge model
        st.integers(0, 2),  # which answer text; for a score, which of them it scored
    ),
    max_size=30,
)


def build(root: Path, drawn: list[tuple[str, str, str, Exclusion | None, bool, int]]) -> None:
    questions: list[str] = []
    answers: list[str] = []
    scores: list[str] = []
    latest: dict[str, str] = {}
    for kind, record_id, topic, excluded, other, text in drawn:
        if kind == "question":
            line = question(record_id, topic).to_json()
            questions.append(reordered(line) if other else line)
        elif kind == "answer":
            line = example(record_id, topic, excluded, f"answer {text}").to_json()
            line = reordered(line) if other else line
            answers.append(line)
            latest[record_id] = line
        else:
            # Mostly a score of the ID's latest answer line so far, as a judge writes them.
            scored = latest.get(record_id, "") if text else ""
            scored = scored or example(record_id, topic, excluded, "another").to_json()
            model = "judge-b" if other else MODEL
            score = QualityScore(record_id, answer_sha(scored), 8, "ok", model, prompt_sha(SOURCE))
            scores.append(score.to_json())
    write(root / "data" / "questions.jsonl", questions)
    write(root / "data" / "answers.jsonl", answers)
    write(root / "data" / "quality.jsonl", scores)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    drawn=entries,
    selected=st.sets(st.sampled_from(TOPICS)),
    redo=st.sets(st.sampled_from([*FEW, "gone-id"])),
    dropped=st.sets(st.sampled_from(FEW), max_size=2),
)
def test_answers_left_is_what_the_full_read_leaves(
    tmp_path_factory: pytest.TempPathFactory,
    drawn: list[tuple[str, str, str, Exclusion | None, bool, int]],
    selected: set[str],
    redo: set[str],
    dropped: set[str],
) -> None:
    root = tmp_path_factory.mktemp("project")
    build(root, drawn)
    project = Project(root)
    if dropped:
        save_force_state(project.force_state("questions"), ForceState(dropped=set(dropped)))
    ctx = cast("StageContext", SimpleNamespace(project=project, selected_topic_names=selected))
    pending, skipped, gone, _ = pending_questions(ctx, set(redo), read_stored(ctx))
    left = answers_left(project, frozenset(selected), redo)
    assert (left.pending, left.skipped, left.gone) == (pending, skipped, gone)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    drawn=entries,
    selected=st.sets(st.sampled_from(TOPICS)),
    redo=st.sets(st.sampled_from(FEW), max_size=1),
)
def test_quality_left_is_what_the_full_read_leaves(
    tmp_path_factory: pytest.TempPathFactory,
    drawn: list[tuple[str, str, str, Exclusion | None, bool, int]],
    selected: set[str],
    redo: set[str],
) -> None:
    root = tmp_path_factory.mktemp("project")
    build(root, drawn)
    project = Project(root)
    topics = frozenset(selected)
    answers = usable_answers(project, topics)
    expected = unscored_among(answers, project.data_file("quality"), MODEL, SOURCE, redo)
    assert unscored_except(project, topics, MODEL, SOURCE, redo) == expected


@pytest.mark.parametrize("again", ["same", "changed", "excluded", "elsewhere"])
def test_a_later_record_of_a_counted_id_takes_its_place(tmp_path: Path, again: str) -> None:
    """The case the random projects rarely draw: an ID already counted as done comes again."""
    first = example(IDS[0], "alpha", None, "one").to_json()
    later = {
        "same": first,
        "changed": example(IDS[0], "alpha", None, "two").to_json(),
        "excluded": example(IDS[0], "alpha", Exclusion.EMPTY, "one").to_json(),
        "elsewhere": example(IDS[0], "beta", None, "one").to_json(),
    }[again]
    other = example(IDS[1], "alpha", None, "three").to_json()
    write(tmp_path / "data" / "answers.jsonl", [first, other, later])
    question_lines = [question(IDS[0], "alpha").to_json(), question(IDS[1], "alpha").to_json()]
    if again != "same":
        question_lines.append(
            question(IDS[0], "beta" if again == "elsewhere" else "alpha").to_json()
        )
    write(tmp_path / "data" / "questions.jsonl", question_lines)
    prompt = prompt_sha(SOURCE)
    scored = [QualityScore(IDS[0], answer_sha(first), 8, "", MODEL, prompt).to_json()]
    write(tmp_path / "data" / "quality.jsonl", scored)
    project = Project(tmp_path)
    topics = frozenset({"alpha"})
    answers = usable_answers(project, topics)
    expected = unscored_among(answers, project.data_file("quality"), MODEL, SOURCE, set())
    assert unscored_except(project, topics, MODEL, SOURCE, set()) == expected
    ctx = cast("StageContext", SimpleNamespace(project=project, selected_topic_names=topics))
    pending, skipped, gone, _ = pending_questions(ctx, set(), read_stored(ctx))
    left = answers_left(project, topics, set())
    assert (left.pending, left.skipped, left.gone) == (pending, skipped, gone)


def test_questions_are_counted_only_when_every_subtopic_is_full(tmp_path: Path) -> None:
    subtopics = [Subtopic("5" * 32, "alpha", "sub"), Subtopic("not-hex", "beta", "other")]
    lines = [question(IDS[n], "alpha").to_json() for n in range(3)]
    lines.append(Question(IDS[3], "beta", "not-hex", "other", "Why?").to_json())
    lines.append(reordered(Question(IDS[4], "beta", "not-hex", "other", "How?").to_json()))
    lines.append(question(IDS[5], "gamma").to_json())  # a topic not selected
    write(tmp_path / "data" / "questions.jsonl", lines)
    project = Project(tmp_path)
    selected = {"alpha", "beta"}
    full = all_filled(project, selected, {"alpha": 3, "beta": 2}, subtopics)
    assert full == {"5" * 32: 3, "not-hex": 2}
    assert all_filled(project, selected, {"alpha": 3, "beta": 3}, subtopics) is None
    write(tmp_path / "data" / "questions.jsonl", [*lines, lines[0]])
    assert all_filled(project, selected, {"alpha": 3, "beta": 2}, subtopics) is None
