"""Resume's compact reads: block reads equal to the line-by-line ones, and shared keys.

The resume readers hold IDs as 64-bit keys (`storage.heads.Key`) and read a file in our
writer's shape a block at a time (`storage.bulk_heads`); a file with a torn tail, a blank
line or a hand-edited line is read line by line instead. Both must say what the full reads
say, and two IDs that share a key must never make a stage redo paid work.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from overbrainer.pipeline import answers_left as answers_left_module
from overbrainer.pipeline import quality_left, questions_left
from overbrainer.pipeline.answers import pending_questions, read_stored
from overbrainer.pipeline.answers_left import answers_left
from overbrainer.pipeline.engine import StageContext
from overbrainer.pipeline.quality import unscored_among, unscored_except, usable_answers
from overbrainer.project.directory import Project
from overbrainer.storage import bulk_heads, heads, lines
from overbrainer.storage.records import Exclusion, Question, Subtopic
from tests.test_resume_heads import IDS, MODEL, SOURCE, build, reordered

IN_SHAPE = st.lists(
    st.tuples(
        st.sampled_from(["question", "answer", "score"]),
        st.sampled_from(IDS[:3]),  # few: the same ID often comes again
        st.sampled_from(["alpha", "beta"]),
        st.sampled_from([None, None, Exclusion.EMPTY]),
        st.booleans(),  # for a score: another judge model
        st.integers(0, 2),
    ).map(lambda e: (*e[:4], e[4] and e[0] == "score", e[5])),
    max_size=30,
)
"""Projects whose every line is in our writer's shape (so the block reads take them)."""

Drawn = tuple[str, str, str, Exclusion | None, bool, int]

SUBTOPICS = [Subtopic("5" * 32, "alpha", "sub"), Subtopic("5" * 32, "beta", "sub")]


def full_reads(project: Project, topics: frozenset[str], redo: set[str]) -> tuple[object, ...]:
    """What the full reads leave to answer and to score."""
    ctx = cast("StageContext", SimpleNamespace(project=project, selected_topic_names=topics))
    pending, skipped, gone, _ = pending_questions(ctx, set(redo), read_stored(ctx))
    answers = usable_answers(project, topics)
    scored = unscored_among(answers, project.data_file("quality"), MODEL, SOURCE, set())
    return pending, skipped, gone, scored


def resume_reads(project: Project, topics: frozenset[str], redo: set[str]) -> tuple[object, ...]:
    """What the resume reads leave to answer and to score."""
    left = answers_left(project, topics, redo)
    scored = unscored_except(project, topics, MODEL, SOURCE, set())
    return left.pending, left.skipped, left.gone, scored


def taken_in_blocks(project: Project) -> bool:
    """Whether every data file is read a block at a time."""
    names = ("answers", "questions", "quality")
    whole = all(bulk_heads.fold_lines(project.data_file(n), lambda _: True) for n in names)
    return whole and bulk_heads.fold_answer_keys(project.data_file("answers"), lambda _: None)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    drawn=IN_SHAPE,
    topics=st.sets(st.sampled_from(["alpha", "beta"])),
    redo=st.sets(st.sampled_from([*IDS[:3], "gone-id"]), max_size=2),
    block=st.sampled_from([1 << 22, 64, 7]),
)
def test_block_reads_say_what_the_full_reads_say(
    tmp_path_factory: pytest.TempPathFactory,
    drawn: list[Drawn],
    topics: set[str],
    redo: set[str],
    block: int,
) -> None:
    """Duplicate IDs, replaced lines and lines across blocks, all read a block at a time."""
    root = tmp_path_factory.mktemp("project")
    build(root, drawn)
    project = Project(root)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lines, "_READ_BLOCK", block)
        assert taken_in_blocks(project)
        chosen = frozenset(topics)
        assert resume_reads(project, chosen, redo) == full_reads(project, chosen, redo)
        path = project.data_file("questions")
        in_blocks = questions_left._counted_in_blocks(path, chosen)
        assert in_blocks == questions_left._counted(path, chosen)


@pytest.mark.parametrize("damage", ["torn", "blank", "edited", "unterminated"])
@pytest.mark.parametrize("name", ["answers", "questions", "quality"])
def test_a_file_not_in_shape_is_read_line_by_line_to_the_same_answer(
    tmp_path: Path, name: str, damage: str
) -> None:
    drawn: list[Drawn] = [
        ("question", IDS[0], "alpha", None, False, 0),
        ("question", IDS[1], "alpha", None, False, 0),
        ("answer", IDS[0], "alpha", None, False, 1),
        ("score", IDS[0], "alpha", None, False, 1),
        ("question", IDS[2], "beta", None, False, 0),
        ("answer", IDS[2], "beta", None, False, 1),
    ]
    build(tmp_path, drawn)
    project = Project(tmp_path)
    path = project.data_file(name)
    text = path.read_text()
    first, rest = text.split("\n", 1)
    text = {
        "torn": text + first[:20],
        "blank": f"{first}\n\n{rest}",
        "edited": f"{reordered(first)}\n{rest}",
        "unterminated": text.rstrip("\n"),  # a whole last line without its newline
    }[damage]
    path.write_text(text)
    topics = frozenset({"alpha", "beta"})
    expected = full_reads(project, topics, set())
    assert resume_reads(project, topics, set()) == expected
    counted = questions_left.all_filled(project, topics, {"alpha": 2, "beta": 1}, SUBTOPICS)
    assert counted == {"5" * 32: 3}


def test_ids_that_share_a_key_never_redo_paid_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every ID given the same key: what is answered is asked again only when a force redoes
    that ID; at worst a question goes unasked in that run."""
    drawn: list[Drawn] = [
        # The ID to redo first and an answered one last: deciding redo on the key alone
        # would carry the redo over to the answered question.
        ("question", IDS[1], "alpha", None, False, 0),
        ("question", IDS[2], "alpha", None, False, 0),
        ("question", IDS[0], "alpha", None, False, 0),
        ("answer", IDS[0], "alpha", None, False, 1),
        ("answer", IDS[1], "alpha", None, False, 1),
    ]
    build(tmp_path, drawn)
    project = Project(tmp_path)
    topics = frozenset({"alpha"})
    exact = {q.id for q in cast("list[Question]", full_reads(project, topics, {IDS[1]})[0])}
    assert exact == {IDS[1], IDS[2]}
    for module in (heads, bulk_heads, answers_left_module, quality_left, questions_left):
        monkeypatch.setattr(module, "hash", lambda _: 7, raising=False)
    for block in (1 << 22, 7):
        monkeypatch.setattr(lines, "_READ_BLOCK", block)
        left = answers_left(project, topics, {IDS[1]})
        asked = {q.id for q in left.pending}
        assert asked <= exact  # never more than the exact reading
        assert IDS[0] not in asked  # answered and not redone: never asked again
