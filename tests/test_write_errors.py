"""A data or run file that cannot be written (permission denied, disk full) is one `error:`
line and exit 2, through the real command; what was stored before stays whole."""

from __future__ import annotations

from pathlib import Path

import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.storage.history import HistoryStatus
from tests import train_helpers
from tests.permissions import permissions_hold
from tests.pipeline_support import (
    Result,
    command,
    command_env,
    history,
    make_project,
    read_examples,
    write_questions,
)

FULL_DISK = """\
import errno, os

_write = os.write
_left = int(os.environ["FULL_AFTER_WRITES"])


def _full(fd, data):
    global _left
    if os.path.realpath(f"/proc/self/fd/{fd}").endswith("/data/answers.jsonl"):
        if _left <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        _left -= 1
    return _write(fd, data)


os.write = _full
"""
"""A `sitecustomize` that makes writes to answers.jsonl fail as on a full disk after N."""


async def run(argv: list[str], env: dict[str, str]) -> Result:
    with trio.fail_after(30):
        done = await trio.run_process(
            argv, env=env, capture_stdout=True, capture_stderr=True, check=False
        )
    return Result(done.returncode, done.stdout.decode(), done.stderr.decode())


def last_line(result: Result) -> str:
    assert "Traceback" not in result.stderr
    return result.stderr.splitlines()[-1]


def answered(request: Recorded) -> Reply:
    return Reply(content="An answer", reasoning="Some thought", usage=(10, 5))


async def test_split_into_a_read_only_data_directory_fails_with_exit_2(tmp_path: Path) -> None:
    prefix = permissions_hold()
    root = make_project(tmp_path / "p")
    write_questions(root, 3)
    (root / "data" / "train.jsonl").write_text("old\n")
    (root / "data").chmod(0o555)
    try:
        result = await run([*prefix, *command(root, "split")], command_env("http://127.0.0.1:9/v1"))
    finally:
        (root / "data").chmod(0o755)
    assert result.code == 2, result.stderr
    assert last_line(result).startswith(f"error: cannot access {root}/data/.train.jsonl.")
    assert last_line(result).endswith(".tmp: Permission denied")
    assert (root / "data" / "train.jsonl").read_text() == "old\n"
    assert sorted(p.name for p in (root / "data").iterdir()) == [
        "questions.jsonl",
        "subtopics.jsonl",
        "train.jsonl",
    ]


async def test_answers_into_a_read_only_file_fails_with_exit_2(tmp_path: Path) -> None:
    prefix = permissions_hold()
    root = make_project(tmp_path / "p")
    write_questions(root, 3)
    answers = root / "data" / "answers.jsonl"
    answers.write_text("")
    answers.chmod(0o444)
    async with open_stub(answered) as stub:
        result = await run([*prefix, *command(root, "answers")], command_env(stub.url))
    assert result.code == 2, result.stderr
    assert last_line(result) == f"error: cannot access {answers}: Permission denied"
    assert answers.read_text() == ""
    assert [line.status for line in history(root)] == [HistoryStatus.FAILED]


async def test_answers_on_a_full_disk_keeps_what_was_stored_and_fails_with_exit_2(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    write_questions(root, 5)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(FULL_DISK)
    env = command_env("", {"PYTHONPATH": str(site), "FULL_AFTER_WRITES": "2"})
    async with open_stub(answered) as stub:
        env["OVERBRAINER_PROVIDERS__STUB__BASE_URL"] = stub.url
        result = await run(command(root, "answers"), env)
    assert result.code == 2, result.stderr
    answers = root / "data" / "answers.jsonl"
    assert last_line(result) == f"error: cannot access {answers}: No space left on device"
    assert len(read_examples(root)) == 2
    assert answers.read_bytes().count(b"\n") == 2
    assert [line.status for line in history(root)] == [HistoryStatus.FAILED]


async def test_train_into_a_read_only_runs_directory_fails_with_exit_2(tmp_path: Path) -> None:
    prefix = permissions_hold()
    root = train_helpers.make_project(tmp_path / "p")
    (root / "runs").mkdir(mode=0o555)
    env = train_helpers.standin_env(tmp_path / "bin")
    result = await run([*prefix, *train_helpers.command(root, "train")], env)
    assert result.code == 2, result.stderr
    assert last_line(result).startswith(f"error: cannot create {root}/runs/")
    assert last_line(result).endswith(": Permission denied")
    assert list((root / "runs").iterdir()) == []


async def test_train_stop_into_a_read_only_run_directory_fails_with_exit_2(
    tmp_path: Path,
) -> None:
    prefix = permissions_hold()
    root = train_helpers.make_project(tmp_path / "p")
    env = train_helpers.standin_env(tmp_path / "bin", STANDIN_STEPS="2000")
    run_id = await trio.to_thread.run_sync(
        train_helpers.start_and_detach, root, env, tmp_path / "err.txt"
    )
    run_dir = root / "runs" / run_id
    try:
        run_dir.chmod(0o555)
        try:
            result = await run(
                [*prefix, *train_helpers.command(root, "train", "stop", run_id)], env
            )
        finally:
            run_dir.chmod(0o755)
        assert result.code == 2, result.stderr
        assert last_line(result).startswith(f"error: cannot write {run_dir}/snapshot.request: ")
        assert last_line(result).endswith("Permission denied")
        assert not (run_dir / "snapshot.request").exists()
    finally:
        cancel = await run(train_helpers.command(root, "train", "cancel", run_id), env)
        assert cancel.code == 0, cancel.stderr
