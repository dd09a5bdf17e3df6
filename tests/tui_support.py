"""`overbrainer tui` in a real terminal: a tmux server of its own, keys in, the screen out."""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from tests.pipeline_support import command, command_env
from tests.real_parts import needs

needs_tmux = needs(
    shutil.which("tmux") is None, "tmux is not installed here (.ci/run installs it with apt-get)"
)


class Terminal:
    """One tmux session running a command; the shell prints `EXIT=<code>` when it ends."""

    def __init__(self, socket: Path) -> None:
        self.socket = socket

    async def tmux(self, *args: str) -> str:
        """Run `tmux -S <socket> ARGS` and return its stdout."""
        with trio.fail_after(10):
            done = await trio.run_process(
                ["tmux", "-S", str(self.socket), *args], capture_stdout=True, capture_stderr=True
            )
        return str(done.stdout.decode())

    async def keys(self, *keys: str) -> None:
        """Type `keys` (tmux key names: `Tab`, `BTab`, `C-c`, `Down`, or plain characters)."""
        for key in keys:
            await self.tmux("send-keys", "-t", "main", key)
            await trio.sleep(0.1)

    async def type(self, text: str) -> None:
        """Type `text` as it is (no key names)."""
        await self.tmux("send-keys", "-t", "main", "-l", text)
        await trio.sleep(0.1)

    async def screen(self) -> str:
        """What the terminal shows now."""
        return await self.tmux("capture-pane", "-p", "-t", "main")

    async def wait_for(self, text: str, limit: float = 60) -> str:
        """The screen once it shows `text`; after `limit` s, AssertionError with the screen."""
        shown = ""
        with trio.move_on_after(limit):
            while True:
                shown = await self.screen()
                if text in shown:
                    return shown
                await trio.sleep(0.1)
        raise AssertionError(f"{text!r} not shown in {limit} s; the screen:\n{shown}")

    async def wait_gone(self, text: str, limit: float = 60) -> str:
        """The screen once it no longer shows `text`; after `limit` s, AssertionError."""
        shown = ""
        with trio.move_on_after(limit):
            while True:
                shown = await self.screen()
                if text not in shown:
                    return shown
                await trio.sleep(0.1)
        raise AssertionError(f"{text!r} still shown after {limit} s; the screen:\n{shown}")


@asynccontextmanager
async def open_terminal(
    root: Path,
    *args: str,
    url: str | None = None,
    env: dict[str, str] | None = None,
    size: tuple[int, int] = (100, 30),
) -> AsyncIterator[Terminal]:
    """`overbrainer -C root ARGS` in a fresh tmux server of `size`; killed on the way out.

    `url` points the project's `stub` provider at a stand-in; None leaves providers alone.
    """
    # A socket of its own, in a short path (a socket path is limited to ~100 bytes) removed
    # on the way out: tmux leaves the file behind when its server is killed.
    folder = Path(tempfile.mkdtemp(prefix="ob-tmux-"))
    terminal = Terminal(folder / "socket")
    variables = command_env(url or "", env)
    if url is None:  # a project without the stub provider
        del variables["OVERBRAINER_PROVIDERS__STUB__BASE_URL"]
    variables.pop("TMUX", None)
    setting = [f"{k}={v}" for k, v in variables.items() if k.startswith(("OVERBRAINER_", "NO_"))]
    line = shlex.join(["env", *setting, *command(root, *args)])
    # The shell outlives a Ctrl-C sent to the terminal (a trap, not an ignore: the program
    # still gets SIGINT) so that its `EXIT=` line stays on the screen.
    shell = f"trap true INT; {line}; echo EXIT=$?; sleep 600"
    cols, rows = size
    await trio.run_process(
        [
            *("tmux", "-S", str(terminal.socket), "-f", os.devnull),
            *("new-session", "-d", "-s", "main"),
            *("-x", str(cols), "-y", str(rows), shell),
        ],
        env={**variables, "SHELL": "/bin/sh"},
    )
    try:
        yield terminal
    finally:
        with trio.move_on_after(10, shield=True):
            await trio.run_process(
                ["tmux", "-S", str(terminal.socket), "kill-server"],
                check=False,
                capture_stderr=True,
            )
        shutil.rmtree(folder, ignore_errors=True)
