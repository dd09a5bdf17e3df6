"""The real `overbrainer train` under a pseudo-terminal: the training job's live bar, then the
run's result lines below its last frame."""

from __future__ import annotations

import fcntl
import functools
import os
import pty
import re
import struct
import termios
from pathlib import Path

import trio

from tests.pipeline_support import wait_until
from tests.test_progress_tty import ANSI, HIDE_CURSOR, SHOW_CURSOR, read_all
from tests.train_helpers import command, kill_jobs, make_project, only_run, standin_env


async def test_train_on_a_terminal_shows_a_live_bar_then_its_results(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", eval_lines=3)
    env = standin_env(
        tmp_path / "bin", STANDIN_STEPS="30", STANDIN_PACE="0.1", STANDIN_EVAL_EVERY="10"
    )
    env |= {"TERM": "xterm-256color", "COLUMNS": "120", "LINES": "30"}
    env.pop("NO_COLOR", None)
    parent, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    screen = bytearray()
    try:
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                process: trio.Process = await nursery.start(
                    functools.partial(
                        trio.run_process,
                        command(project, "train"),
                        env=env,
                        stdout=child,
                        stderr=child,
                        check=False,
                    )
                )
                os.close(child)
                reading = trio.lowlevel.FdStream(parent)
                nursery.start_soon(read_all, reading, screen)
                code = await process.wait()
                await wait_until(lambda: SHOW_CURSOR in screen[screen.rfind(HIDE_CURSOR) :], 5)
                nursery.cancel_scope.cancel()
        await reading.aclose()
    finally:
        kill_jobs(tmp_path)
    text = ANSI.sub("", screen.decode())
    run_id = only_run(project)
    assert code == 0, text
    assert "Traceback" not in text
    # While it trains: steps of the total, epoch, the rate and an ETA, the phase and losses.
    assert re.search(r"train +[━╸╺]+ +\d+/30 steps, epoch 0\.\d\d  [\d.]+ it/s, ETA \d+s", text)
    assert re.search(r"training · loss \d\.\d{4} · eval loss 0\.\d{4}", text)
    # The last frame: every step, how long the job took, how it ended.
    last = re.search(r"30/30 steps, epoch 1\.00  [\d.]+ it/s, took \d+s", text)
    assert last is not None
    assert re.search(r"job exited with code 0 · loss 1\.0000 · eval loss 0\.\d{4}", text)
    # Important lines still show above the bar; metric and phase lines are the bar's.
    assert "INFO train: job exited with code 0" in text
    assert "train: step " not in text and "train: evaluating" not in text
    # The result lines come below the bar's last frame, whole.
    result = text.index(f"train: run {run_id} succeeded; step 30/30, epoch 1.00, loss 1.0000")
    assert result > last.end()
    assert f"train: adapter in runs/{run_id}/output" in text[result:]
    # The cursor is shown again after the last time the bar hid it.
    assert screen.rfind(SHOW_CURSOR) > screen.rfind(HIDE_CURSOR) >= 0
