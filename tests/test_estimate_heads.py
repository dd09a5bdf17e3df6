"""`estimate` counts the stored questions and answers from their line heads: it builds a
`Question` only for a question still to answer and never an answer record (issue 41), and a
question ID stored twice (a force's or a hand edit's leftover) counts once, as readers see it."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from overbrainer.config.load import load_settings
from overbrainer.events.types import Stage
from overbrainer.pipeline.engine import load_templates
from overbrainer.pipeline.estimate import StageEstimate, estimate_stages
from overbrainer.project.directory import Project
from overbrainer.storage.ids import question_id
from overbrainer.storage.records import Example, Question, Subtopic
from tests.pipeline_support import command, make_project, write_answered
from tests.scale_support import measured, scale_project, working_copy

PEAK_RSS = 100_000_000
"""Bytes, for `estimate` on a finished project of 100,000 answers. On main at 63a86cb (2 cores,
24 GiB, 2026-12-07) it peaked at 131 MB (2.0 s CPU), building every question and listing every
answer ID; from line heads it peaks at 68 MB (1.4 s): the bound is that plus ~45%, under the
old figure."""
UNSCORED_PEAK_RSS = 120_000_000
"""Bytes, for `estimate quality` on that project with no score stored. On main it peaked at
337 MB (3.7 s CPU), holding every answer to score; keeping only the size of each it peaks at
83 MB (2.8 s)."""
STAGES = (Stage.SUBTOPICS, Stage.QUESTIONS, Stage.ANSWERS)
UNANSWERED = ("Qu'est-ce qu'un emprunt mutable, déjà ?", "Why can a Box move?", "What is Pin?")


def answered_and_three_not(root: Path) -> list[str]:
    """40 answered questions in two topics and three unanswered ones (one not ASCII); the
    unanswered questions' lines."""
    write_answered(root, 40, ("ownership", "async"))
    data = root / "data"
    first = Subtopic.from_json(data.joinpath("subtopics.jsonl").read_text().splitlines()[0])
    lines = [
        Question(question_id(first.id, text), first.topic, first.id, first.name, text).to_json()
        for text in UNANSWERED
    ]
    with data.joinpath("questions.jsonl").open("a") as questions:
        questions.writelines(line + "\n" for line in lines)
    return lines


def estimated(root: Path) -> list[StageEstimate]:
    project = Project(root)
    return estimate_stages(project, load_settings(root, {}), STAGES, load_templates(project))


def counting(monkeypatch: pytest.MonkeyPatch, record: type[Question] | type[Example]) -> list[str]:
    """Every line `record.from_json` parses from now on."""
    parsed: list[str] = []
    parse: Callable[[str | bytes], object] = record.from_json

    def counted(line: str | bytes) -> object:
        parsed.append(line if isinstance(line, str) else line.decode())
        return parse(line)

    monkeypatch.setattr(record, "from_json", counted)
    return parsed


def test_only_the_questions_still_to_answer_are_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(tmp_path / "p")
    unanswered = answered_and_three_not(root)
    questions = counting(monkeypatch, Question)
    answers = counting(monkeypatch, Example)
    by_stage = {estimate.stage: estimate for estimate in estimated(root)}
    assert questions == unanswered
    assert answers == []
    assert by_stage[Stage.ANSWERS].items == 3
    # Both topics have their two subtopics and each subtopic its questions: nothing to ask.
    assert by_stage[Stage.SUBTOPICS].items == by_stage[Stage.QUESTIONS].items == 0


def test_a_question_stored_twice_counts_once(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    unanswered = answered_and_three_not(root)
    once = estimated(root)
    answered = root.joinpath("data", "questions.jsonl").read_text().splitlines()[0]
    with root.joinpath("data", "questions.jsonl").open("a") as questions:
        questions.write(f"{unanswered[0]}\n{answered}\n")
    assert estimated(root) == once


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_estimate_of_a_finished_100k_project_stays_under_its_memory_bound(
    tmp_path: Path,
) -> None:
    root = working_copy(scale_project("100k"), tmp_path / "p")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    run = measured(command(root, "estimate"), env | {"NO_COLOR": "1"}, limit=300)
    assert run.code == 0
    assert run.peak_rss < PEAK_RSS, f"{run.peak_rss / 1e6:.0f} MB, {run.cpu_s:.1f} s CPU"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_estimate_of_100k_answers_to_score_stays_under_its_memory_bound(tmp_path: Path) -> None:
    root = working_copy(scale_project("100k"), tmp_path / "p")
    (root / "data" / "quality.jsonl").unlink()  # a link of the cached project's file
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    run = measured(command(root, "estimate", "quality"), env | {"NO_COLOR": "1"}, limit=300)
    assert run.code == 0
    assert run.peak_rss < UNSCORED_PEAK_RSS, f"{run.peak_rss / 1e6:.0f} MB, {run.cpu_s:.1f} s"
