"""The init wizard on the screen: urwid inside Trio, writing the project when confirmed."""

from __future__ import annotations

import signal
from pathlib import Path

import attrs
import trio
import urwid

from overbrainer.model.errors import OverbrainerError
from overbrainer.ui.tui.loop import text_screen
from overbrainer.ui.tui.typeahead import TypeAhead
from overbrainer.ui.tui.wizard import Wizard, answers, keys_hint, lines, start, wizard_key
from overbrainer.ui.tui.wizard_files import write_project


class WizardRunner:
    """Runs the wizard until the user quits (None) or answers «start auto now?» (True/False)."""

    def __init__(
        self,
        root: Path,
        screen: urwid.display.raw.Screen | None = None,
        typeahead: TypeAhead | None = None,
    ) -> None:
        self.typeahead = typeahead
        self.root = root
        self.state: Wizard = start(root.resolve().name)
        self.done = trio.Event()
        self.body = urwid.Text("")
        self.footer = urwid.Text("")
        self.event_loop, self.main = text_screen(self.body, self.footer, self.on_key, screen)
        self.nursery: trio.Nursery | None = None

    def on_key(self, key: str | tuple[object, ...]) -> bool:
        """Each key goes through the pure wizard; a confirmed summary writes the project."""
        if isinstance(key, str):
            self.update(wizard_key(self.state, key))
        return True

    def update(self, state: Wizard) -> None:
        """Take `state`, write the project when it asks, redraw, and end when it is over."""
        self.state = state
        if state.submit and self.nursery is not None:
            self.nursery.start_soon(self._write)
        if state.quit or state.start_auto is not None:
            self.done.set()
        self.draw()

    async def _write(self) -> None:
        try:
            await trio.to_thread.run_sync(write_project, self.root, answers(self.state))
        except OverbrainerError as error:
            self.update(attrs.evolve(self.state, submit=False, error=error.message))
            return
        self.update(attrs.evolve(self.state, submit=False, written=True, error=""))

    def draw(self) -> None:
        """Put the wizard on the screen."""
        self.body.set_text("\n".join(lines(self.state)))
        self.footer.set_text(("keys", keys_hint(self.state)))
        self.main.draw_screen()

    async def _signals(self) -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
            async for _ in signals:
                self.update(attrs.evolve(self.state, quit=True))

    async def run(self) -> bool | None:
        """None when the user quit (nothing written unless confirmed), else «start auto now?»."""
        early = self.typeahead.take() if self.typeahead is not None else []
        async with trio.open_nursery() as ui:
            with self.main.start():
                ui.start_soon(self.event_loop.run_async)
                async with trio.open_nursery() as work:
                    self.nursery = work
                    work.start_soon(self._signals)
                    self.draw()
                    self.main.process_input(early)  # keys typed while the wizard started
                    await self.done.wait()
                    work.cancel_scope.cancel()
                ui.cancel_scope.cancel()
        return None if self.state.quit else self.state.start_auto
