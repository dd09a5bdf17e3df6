"""Ctrl-C and SIGTERM during `import questions` of 30,000 questions: the command stops within
seconds, writes nothing and exits 130, whether the signal comes as the checking starts, once a
third of the rows are checked, or while the project's 300,000 stored questions are read, seeded
and ranked."""

from __future__ import annotations

import json
import random
import signal
from pathlib import Path

import pytest
import trio

from overbrainer.storage import Question, Subtopic, question_id, subtopic_id
from tests.pipeline_support import make_project, start, wait_until, write_questions

NO_PROVIDER = "http://127.0.0.1:9"
"""The import asks no provider: a URL that nothing answers."""
QUESTIONS = 30_000
CHECKING = "import: checking 30000 question(s) for duplicates"
MID_CHECK = "import: 10000 of 30000 question(s) checked"
READING = "import: reading the stored questions of ownership"
STORED = 300_000
PROMPT = 10.0
"""Seconds the command may take to end after the signal, on a loaded machine."""
WORDS = [
    "borrow",
    "move",
    "owner",
    "lifetime",
    "trait",
    "closure",
    "box",
    "pin",
    "future",
    "async",
    "await",
    "drop",
    "clone",
    "copy",
    "slice",
    "vector",
    "string",
    "reference",
    "mutable",
    "shared",
    "thread",
    "send",
    "sync",
    "arc",
    "mutex",
    "channel",
]


def drawn(draw: random.Random, n: int) -> str:
    return f"{' '.join(draw.choice(WORDS) for _ in range(12))} case {n}?"


def write_file(path: Path) -> Path:
    """QUESTIONS questions drawn from a few words: each shares its rarer bigrams with hundreds of
    others, so checking them for near-duplicates takes seconds of CPU."""
    draw = random.Random(40)
    with path.open("w", encoding="utf-8") as file:
        for n in range(QUESTIONS):
            file.write(json.dumps({"question": drawn(draw, n)}) + "\n")
    return path


def write_stored(root: Path) -> None:
    """STORED questions in `ownership`: reading, seeding and ranking them takes seconds of CPU."""
    draw = random.Random(39)
    sub = Subtopic(subtopic_id("ownership", "Basics"), "ownership", "Basics")
    data = root / "data"
    data.mkdir(exist_ok=True)
    (data / "subtopics.jsonl").write_text(sub.to_json() + "\n")
    with (data / "questions.jsonl").open("w", encoding="utf-8") as file:
        for n in range(STORED):
            text = f"Stored {drawn(draw, n)}"
            question = Question(question_id(sub.id, text), "ownership", sub.id, sub.name, text)
            file.write(question.to_json() + "\n")


def data_files(root: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted((root / "data").iterdir())}


async def interrupted(root: Path, file: Path, signum: signal.Signals, line: str) -> str:
    """Import `file`, send `signum` once the command has logged `line`, check it stopped
    promptly and wrote nothing; its stderr."""
    before = data_files(root)
    async with trio.open_nursery() as nursery:
        process = await start(
            nursery, root, "import", "questions", str(file), "--topic", "ownership", url=NO_PROVIDER
        )
        # Ordered by the command's own lines: the phase has begun, or gone a third of the way.
        await wait_until(lambda: line in (root / "stderr.txt").read_text())
        assert process.poll() is None, "the import ended before the signal: make it slower"
        process.send_signal(signum)
        with trio.fail_after(PROMPT):
            code = await process.wait()
    stderr = (root / "stderr.txt").read_text()
    assert code == 130, stderr
    assert stderr.strip().splitlines()[-1] == (
        "interrupted: nothing was imported; run the import again to add it"
    )
    assert "Traceback" not in stderr
    assert (root / "stdout.txt").read_text() == ""
    assert data_files(root) == before
    assert (root / ".overbrainer" / "lock").read_text() == ""
    return stderr


@pytest.mark.parametrize(
    ("signum", "line"),
    [(signal.SIGINT, CHECKING), (signal.SIGINT, MID_CHECK), (signal.SIGTERM, CHECKING)],
    ids=["sigint-at-start", "sigint-mid-check", "sigterm-at-start"],
)
async def test_a_signal_during_the_import_stops_it_promptly_writing_nothing(
    tmp_path: Path, signum: signal.Signals, line: str
) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 3)
    await interrupted(root, write_file(tmp_path / "many.jsonl"), signum, line)


async def test_ctrl_c_while_the_stored_questions_are_read_and_ranked_stops_the_import(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    write_stored(root)
    stderr = await interrupted(root, write_file(tmp_path / "many.jsonl"), signal.SIGINT, READING)
    # The signal came before the checking: the read (or the seeding, or the ranking) stopped.
    assert CHECKING not in stderr, "the stored questions were read before the signal"
