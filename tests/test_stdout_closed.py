"""A reader that goes away (`overbrainer run | head -1`) neither stops the work nor tracebacks."""

from __future__ import annotations

import os
from pathlib import Path

import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.storage.history import HistoryStatus
from tests.pipeline_support import command, command_env, history, make_project, read_examples


async def test_run_with_its_stdout_reader_gone_finishes_and_records(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to stdout now fails with EPIPE
    try:
        async with open_stub() as stub:
            with trio.fail_after(30):
                done = await trio.run_process(
                    command(root, "run"),
                    env=command_env(stub.url),
                    stdout=write_end,
                    capture_stderr=True,
                    check=False,
                )
    finally:
        os.close(write_end)
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert [(h.stage.value, h.status) for h in history(root)] == [
        ("subtopics", HistoryStatus.OK),
        ("questions", HistoryStatus.OK),
        ("answers", HistoryStatus.OK),
        ("split", HistoryStatus.OK),
    ]
    assert len(read_examples(root)) == 8


async def test_system_watch_ends_quietly_when_its_reader_goes(tmp_path: Path) -> None:
    make_project(tmp_path)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        with trio.fail_after(20):
            done = await trio.run_process(
                command(tmp_path, "system", "--watch"),
                env=command_env("http://127.0.0.1:1/v1"),
                stdout=write_end,
                capture_stderr=True,
                check=False,
            )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr.decode()) == (1, "")
