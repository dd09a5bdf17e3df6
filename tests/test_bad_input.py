"""A corrupt data line is bad input: every stage command exits 2 with one line and writes
nothing at all (no history line, no force state, no data), as `run` does."""

from __future__ import annotations

from pathlib import Path

import pytest

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from tests.pipeline_support import make_project, overbrainer, write_answered

CORRUPT = '{"broken":'


def corrupt(root: Path, name: str) -> Path:
    """Break the second line of `data/<name>.jsonl`; the file's path."""
    path = root / "data" / f"{name}.jsonl"
    lines = path.read_text().splitlines()
    lines[1] = CORRUPT
    path.write_text("\n".join(lines) + "\n")
    return path


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the project but the lock (which any command takes) and the test's own."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name != "lock"
    }


def reply(request: Recorded) -> Reply:
    return Reply(content='["One?", "Two?"]', reasoning="thought", usage=(10, 5))


@pytest.mark.parametrize(
    ("args", "broken"),
    [
        (("answers",), "answers"),
        (("answers",), "questions"),
        (("answers", "--force"), "answers"),
        (("answers", "--force"), "questions"),
        (("questions",), "questions"),
        (("questions", "--force"), "questions"),
        (("subtopics",), "subtopics"),
        (("subtopics", "--force"), "subtopics"),
        (("split",), "answers"),
        (("split",), "questions"),
    ],
)
async def test_a_corrupt_data_line_writes_nothing_and_exits_2(
    tmp_path: Path, args: tuple[str, ...], broken: str
) -> None:
    root = make_project(tmp_path / "p")
    write_answered(root, 6, topics=("ownership", "async"))
    # Unanswered questions, so that answers would have work to do.
    answers = root / "data" / "answers.jsonl"
    answers.write_text("".join(answers.read_text().splitlines(True)[:3]))
    path = corrupt(root, broken)
    before = snapshot(root)
    async with open_stub(reply) as stub:
        result = await overbrainer(root, *args, url=stub.url)
    assert result.code == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1].startswith(f"error: {path}:2: invalid record: ")
    assert stub.completions == []
    assert snapshot(root) == before
    assert not (root / ".overbrainer" / "history.jsonl").exists()


async def test_questions_checks_its_input_before_running_subtopics_for_it(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    # `async` has no subtopics: `questions` runs the subtopics stage for it first.
    write_answered(root, 6, topics=("ownership",))
    path = corrupt(root, "questions")
    before = snapshot(root)
    async with open_stub(reply) as stub:
        result = await overbrainer(root, "questions", url=stub.url)
    assert result.code == 2, result.stderr
    assert result.stderr.splitlines()[-1].startswith(f"error: {path}:2: invalid record: ")
    assert stub.completions == []
    assert snapshot(root) == before
    assert not (root / ".overbrainer" / "history.jsonl").exists()
