"""A really full disk (a small tmpfs filled to its last byte) through the real command: one
`error:` line naming the file, exit 2, nothing stored lost, and the next run resumes."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.storage.jsonl import read_records
from overbrainer.storage.records import Example
from tests.pipeline_support import (
    Result,
    completion_prompts,
    make_project,
    overbrainer,
    read_examples,
    start,
    wait_until,
    write_answered,
    write_questions,
)
from tests.real_parts import missing

NO_SPACE = "No space left on device"


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs of its own, unmounted after the test; skipped (in CI: failed) where none can
    be mounted."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        missing("mounting a tmpfs needs root: a full disk cannot be made here")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        missing(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Take every free byte of `disk` (big writes, then single bytes for the last page)."""
    filler = disk / "filler"
    with filler.open("ab", buffering=0) as out:
        for size in (1 << 16, 1):
            with contextlib.suppress(OSError):
                while True:
                    out.write(b"\0" * size)
    return filler


def only_error_line(result: Result) -> str:
    """The error line, after checking it is the only one and not a traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert result.stderr.splitlines()[-1] == errors[0]
    return errors[0]


def answered(request: Recorded) -> Reply:
    # Over a page each, so that every answer needs a new page of the disk.
    return Reply(content="An answer. " * 500, reasoning="Some thought", usage=(10, 5))


async def test_a_full_disk_at_the_start_stops_before_asking_anything(disk: Path) -> None:
    root = make_project(disk / "p")
    write_questions(root, 3)
    filler = fill(disk)
    async with open_stub(answered) as stub:
        result = await overbrainer(root, "answers", url=stub.url)
        assert result.code == 2, result.stderr
        lock = root / ".overbrainer" / "lock"
        assert only_error_line(result) == f"error: cannot lock {lock}: {NO_SPACE}"
        assert stub.completions == []
        assert read_examples(root) == []

        filler.unlink()
        rerun = await overbrainer(root, "answers", url=stub.url)
    assert rerun.code == 0, rerun.stderr
    assert len(read_examples(root)) == 3


async def test_a_disk_filling_midway_keeps_the_stored_answers_and_the_next_run_resumes(
    disk: Path,
) -> None:
    root = make_project(disk / "p", concurrency=1)
    questions = write_questions(root, 12)
    answers = root / "data" / "answers.jsonl"

    def stored() -> list[Example]:
        return read_records(answers, Example.from_json)

    async with open_stub(answered) as stub, trio.open_nursery() as nursery:
        stub.responder = lambda request: Reply(
            content="An answer. " * 500, reasoning="Some thought", usage=(10, 5), delay=0.2
        )
        process = await start(nursery, root, "answers", url=stub.url)
        await wait_until(lambda: len(stored()) >= 2)
        filler = fill(disk)
        with trio.fail_after(20):
            code = await process.wait()
        stderr = (root / "stderr.txt").read_text()
        result = Result(code, "", stderr)
        assert code == 2, stderr
        assert only_error_line(result) == f"error: cannot access {answers}: {NO_SPACE}"
        kept = stored()
        assert 2 <= len(kept) < 12
        # Whole records stay whole: at most the one being written is torn.
        assert answers.read_bytes().count(b"\n") == len(kept)

        filler.unlink()
        asked = len(stub.completions)
        stub.responder = answered
        rerun = await overbrainer(root, "answers", url=stub.url)
        assert rerun.code == 0, rerun.stderr
        asked_again = completion_prompts(stub)[asked:]
    assert sorted(asked_again) == sorted(
        {q.text for q in questions} - {e.messages[0].content for e in kept}
    )
    final = read_examples(root)
    assert sorted(e.id for e in final) == sorted(q.id for q in questions)


async def test_split_on_a_full_disk_keeps_the_old_train_file(disk: Path) -> None:
    root = make_project(disk / "p")
    write_answered(root, 40)
    train = root / "data" / "train.jsonl"
    train.write_text("old\n")
    # A lock left by an earlier run: its page is freed and taken again, so the first write
    # that needs new space is split's.
    (root / ".overbrainer" / "lock").write_text("1234567")
    filler = fill(disk)
    result = await overbrainer(root, "split", url="http://127.0.0.1:9/v1")
    assert result.code == 2, result.stderr
    assert only_error_line(result) == f"error: cannot access {train}: {NO_SPACE}"
    assert train.read_text() == "old\n"
    assert sorted(p.name for p in (root / "data").iterdir()) == [
        "answers.jsonl",
        "questions.jsonl",
        "subtopics.jsonl",
        "train.jsonl",
    ]
    filler.unlink()
    rerun = await overbrainer(root, "split", url="http://127.0.0.1:9/v1")
    assert rerun.code == 0, rerun.stderr
    assert train.read_text() != "old\n"
