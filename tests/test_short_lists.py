"""A generator's short list is asked again for the rest, and a stage still short says N of M.

The reference counts a short topic `done` after its one request; we ask again until the topic
is full or the generator stops giving new names, as `questions` fills a subtopic.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.storage.ids import subtopic_id
from overbrainer.storage.jsonl import read_records
from overbrainer.storage.records import Question, Subtopic
from tests.pipeline_support import completion_prompts, make_project, overbrainer


def project(root: Path, *, subtopics: int = 2, questions: int = 2) -> Path:
    """The two-topic stub project with `ownership` asking for these counts."""
    make_project(root)
    config = root / "overbrainer.toml"
    text = config.read_text()
    text = text.replace(
        "subtopics = 2\nquestions_per_subtopic = 2",
        f"subtopics = {subtopics}\nquestions_per_subtopic = {questions}",
        1,
    )
    config.write_text(text)
    return root


def ten_at_a_time() -> Callable[[Recorded], Reply]:
    """A generator that gives 10 new names per answer, whatever count it was asked for."""
    answers = itertools.count()

    def reply(_request: Recorded) -> Reply:
        start = 10 * next(answers)
        names = [f"Part {n} of ownership" for n in range(start, start + 10)]
        return Reply(content=json.dumps(names), usage=(100, 50))

    return reply


def same_ten(_request: Recorded) -> Reply:
    """A generator that always gives the same 10 names."""
    names = [f"Part {n} of ownership" for n in range(10)]
    return Reply(content=json.dumps(names), usage=(100, 50))


def stored_subtopics(root: Path) -> list[Subtopic]:
    """The project's stored subtopics."""
    return read_records(root / "data" / "subtopics.jsonl", Subtopic.from_json)


async def test_a_short_list_of_subtopics_is_asked_again_for_the_missing_count(
    tmp_path: Path,
) -> None:
    root = project(tmp_path / "p", subtopics=40)
    async with open_stub(ten_at_a_time()) as stub:
        result = await overbrainer(root, "subtopics", "--topic", "ownership", url=stub.url)
        prompts = completion_prompts(stub)
    assert result.code == 0, result.stderr
    assert [p.split("List ")[1].split(" ")[0] for p in prompts] == ["40", "30", "20", "10"]
    assert len(stored_subtopics(root)) == 40
    assert result.out_lines == [
        "subtopics: 1 done, 0 skipped, 0 failed, 0 excluded; tokens 400 in, 200 out; cost unknown"
    ]
    assert "stopped" not in result.stderr


async def test_a_generator_that_repeats_itself_leaves_the_topic_at_n_of_m_with_a_warning(
    tmp_path: Path,
) -> None:
    root = project(tmp_path / "p", subtopics=40)
    async with open_stub(same_ten) as stub:
        result = await overbrainer(root, "subtopics", "--topic", "ownership", url=stub.url)
        asked = len(stub.completions)
    assert result.code == 0, result.stderr
    # One productive answer, then `max_retries` (2) answers with nothing new.
    assert asked == 3
    assert len(stored_subtopics(root)) == 10
    assert (
        "topic `ownership`: stopped at 10 of 40 subtopics, the generator kept repeating itself"
        in result.stderr
    )
    assert (
        "subtopics: 1 topic stopped short: 10 of 40 subtopics; "
        "run `overbrainer subtopics` again to ask for the rest"
    ) in result.stderr


async def test_a_subtopic_left_short_of_questions_is_reported_as_n_of_m(tmp_path: Path) -> None:
    root = project(tmp_path / "p", questions=5)
    subtopic = Subtopic(subtopic_id("ownership", "Borrowing"), "ownership", "Borrowing")
    (root / "data").mkdir()
    (root / "data" / "subtopics.jsonl").write_text(subtopic.to_json() + "\n")

    def two_questions(_request: Recorded) -> Reply:
        texts = ["Why does a borrow end at its last use?", "When is a move a copy?"]
        return Reply(content=json.dumps(texts), usage=(100, 50))

    async with open_stub(two_questions) as stub:
        result = await overbrainer(root, "questions", "--topic", "ownership", url=stub.url)
    assert result.code == 0, result.stderr
    questions = read_records(root / "data" / "questions.jsonl", Question.from_json)
    assert len(questions) == 2
    assert result.out_lines[0].startswith("questions: 1 done, 0 skipped, 0 failed")
    assert (
        "questions: 1 subtopic stopped short: 2 of 5 questions; "
        "run `overbrainer questions` again to ask for the rest"
    ) in result.stderr
