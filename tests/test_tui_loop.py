"""The TUI's loop in this process on a pseudo-terminal: the flows run, and no task outlives it."""

from __future__ import annotations

import fcntl
import io
import os
import struct
import termios
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

import attrs
import pytest
import trio
import urwid

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.flows.setup import CommandOptions
from overbrainer.model.errors import EXIT_OK, UsageError
from overbrainer.project.directory import open_project, project_lock
from overbrainer.ui.logs import LogBuffer
from overbrainer.ui.tui.loop import Runner
from overbrainer.ui.tui.main import check_terminal
from overbrainer.ui.tui.messages import Key
from overbrainer.ui.tui.state import View
from overbrainer.ui.tui.typeahead import keep_typeahead, keys_of
from tests.pipeline_support import make_project, wait_until
from tests.tasks import live_tasks


@contextmanager
def pseudo_terminal(cols: int, rows: int) -> Iterator[tuple[int, TextIO, TextIO]]:
    """A pty of `cols` x `rows`: its master descriptor, and its slave opened to read and write."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    name = os.ttyname(slave)
    try:
        with open(name, encoding="utf-8") as reader, open(name, "w", encoding="utf-8") as writer:
            yield master, reader, writer
    finally:
        os.close(slave)
        os.close(master)


async def drain(master: int) -> None:
    """Read what the app draws, so that its writes never block."""
    while True:
        await trio.lowlevel.wait_readable(master)
        try:
            os.read(master, 65536)
        except OSError:
            return


async def test_auto_mode_then_quit_leaves_no_task_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub:
        monkeypatch.setenv("OVERBRAINER_PROVIDERS__STUB__BASE_URL", stub.url)
        with pseudo_terminal(100, 30) as (master, reader, writer), trio.fail_after(60):
            project = open_project(root)
            screen = urwid.display.raw.Screen(input=reader, output=writer)
            options = attrs.evolve(CommandOptions(root), lock_held=True)
            runner = Runner(project, options, LogBuffer(), View.PIPELINE, screen=screen)
            async with trio.open_nursery() as outer:
                outer.start_soon(drain, master)
                before = live_tasks()
                code: list[int] = []

                async def run() -> None:
                    with project_lock(project):
                        code.append(await runner.run())

                outer.start_soon(run)
                await wait_until(lambda: runner.tasks is not None and not runner.state.tasks)
                runner.post(Key("A"))
                await wait_until(lambda: runner.state.confirm, 30)  # the estimate, asked
                assert runner.state.confirm[-1] == "y runs it, n or Esc does not"
                runner.post(Key("y"))
                await wait_until(lambda: runner.state.lines[-1:] and not runner.state.tasks, 30)
                runner.post(Key("q"))
                await wait_until(lambda: code)
                assert live_tasks() == before
                outer.cancel_scope.cancel()
    assert code == [EXIT_OK]
    assert runner.state.lines[-1] == "split: 7 train, 1 eval, 0 excluded, 0 orphaned"


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_stdin_and_stdout_must_both_be_terminals() -> None:
    with pytest.raises(UsageError, match="^overbrainer tui needs a terminal: stdout is not a TTY$"):
        check_terminal(_Stream(False), _Stream(True))
    with pytest.raises(UsageError, match="^overbrainer tui needs a terminal: stdin is not a TTY$"):
        check_terminal(_Stream(True), _Stream(False))


def test_typed_ahead_bytes_become_urwid_key_names() -> None:
    assert keys_of(b"6f\t\x1b[5~q") == ["6", "f", "tab", "page up", "q"]
    assert keys_of(b"") == []


def test_keys_typed_before_the_screen_are_read_without_a_flush() -> None:
    with pseudo_terminal(80, 24) as (master, reader, _):
        os.write(master, b"4x")  # a partial line: canonical mode holds it back
        with keep_typeahead(reader.fileno()) as typeahead:
            assert typeahead.take() == ["4", "x"]
            assert typeahead.take() == []
        assert termios.tcgetattr(reader.fileno())[3] & termios.ICANON  # the settings back
