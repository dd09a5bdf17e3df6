"""The real `overbrainer answers` under a pseudo-terminal (live bar, Ctrl-C) and with `-q`."""

from __future__ import annotations

import fcntl
import functools
import os
import pty
import re
import signal
import struct
import termios
from pathlib import Path

import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from tests.pipeline_support import (
    PRICES,
    command,
    command_env,
    make_project,
    overbrainer,
    wait_until,
    write_questions,
)

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
HIDE_CURSOR, SHOW_CURSOR = b"\x1b[?25l", b"\x1b[?25h"


def slow(request: Recorded) -> Reply:
    prompt = request.prompt
    return Reply(content=f"Answer to {prompt}", reasoning="thinking", usage=(100, 50), delay=0.6)


def terminal_env(url: str) -> dict[str, str]:
    env = command_env(url, {"TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"})
    env.pop("NO_COLOR", None)
    return env


async def read_all(stream: trio.lowlevel.FdStream, into: bytearray) -> None:
    while True:
        try:
            chunk = await stream.receive_some(65536)
        except (OSError, trio.BrokenResourceError):  # EIO: the child side closed
            return
        if not chunk:
            return
        into.extend(chunk)


async def test_a_live_bar_on_a_terminal_then_ctrl_c_leaves_it_clean(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=2)
    write_questions(root, 10)
    parent, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    screen = bytearray()
    async with open_stub(slow) as stub, trio.open_nursery() as nursery:
        stub.models = PRICES
        with (root / "stdout.txt").open("wb") as out:
            process: trio.Process = await nursery.start(
                functools.partial(
                    trio.run_process,
                    command(root, "answers"),
                    env=terminal_env(stub.url),
                    stdout=out,
                    stderr=child,
                    check=False,
                )
            )
        os.close(child)
        reading = trio.lowlevel.FdStream(parent)
        nursery.start_soon(read_all, reading, screen)
        await wait_until(lambda: b"/10 answers" in screen and len(stub.completions) >= 4, 20)
        process.send_signal(signal.SIGINT)
        with trio.fail_after(15):
            code = await process.wait()
        with trio.fail_after(5):
            await wait_until(lambda: SHOW_CURSOR in screen[screen.rfind(HIDE_CURSOR) :], 5)
        nursery.cancel_scope.cancel()
    await reading.aclose()
    assert code == 130
    text = ANSI.sub("", screen.decode())
    assert "Traceback" not in text
    assert "━" in text and "ETA" in text
    # The last frame stays, with what was done, spent and how long it took.
    assert re.search(r"answers\s+[━╸╺]+\s+\d+/10 answers  [\d.]+/(s|min), took \d+s", text)
    assert re.search(r"tokens \d+ in, \d+ out · \$0\.\d{4} · 0 failed · 0 retries", text)
    assert text.rstrip().splitlines()[-1] == "interrupted: the stage resumes on its next run"
    # The cursor is shown again after the last time the bar hid it.
    assert screen.rfind(SHOW_CURSOR) > screen.rfind(HIDE_CURSOR) >= 0
    # Item lines the bar replaces are not logged.
    assert "to process" not in text and ": finished" not in text
    # stdout is not the terminal: its summary line is the reference's, untouched by the bar.
    [summary] = (root / "stdout.txt").read_text().splitlines()
    assert re.fullmatch(
        r"answers: \d+ done, 0 skipped, 0 failed, 0 excluded; "
        r"tokens \d+ in, \d+ out; cost \$\d+\.\d{4}",
        summary,
    )


async def test_quiet_keeps_the_summary_and_warnings_only(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    questions = write_questions(root, 3)
    async with open_stub(slow) as stub:
        stub.models = PRICES
        stub.queue(Reply(status=429, content="slow down", headers={"retry-after": "0"}))
        result = await overbrainer(root, "-q", "answers", url=stub.url)
        loud = await overbrainer(root, "answers", "--force", url=stub.url)
    assert result.code == 0
    assert result.out_lines == [
        "answers: 3 done, 0 skipped, 0 failed, 0 excluded; tokens 300 in, 150 out; cost $0.6000"
    ]
    [warning] = result.stderr.splitlines()
    assert warning.endswith(
        f" WARN answers: {questions[0].id}: HTTP 429: slow down; retrying in 0.0s"
    )
    # Without -q the same run logs its item lines too.
    assert "answers: 3 to process" in loud.stderr
