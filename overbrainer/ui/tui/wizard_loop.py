"""The init wizard on the screen: urwid inside Trio, writing the project when confirmed."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import attrs
import trio
import urwid

from overbrainer.model.errors import OverbrainerError
from overbrainer.ui.tui.look import look_of
from overbrainer.ui.tui.loop import text_screen
from overbrainer.ui.tui.typeahead import TypeAhead
from overbrainer.ui.tui.wizard import (
    Wizard,
    answers,
    start,
    wanted_estimate,
    wanted_listing,
    wanted_local,
    wizard_key,
)
from overbrainer.ui.tui.wizard_estimate import (
    ProviderAsk,
    estimate_answers,
    fetch_listing,
)
from overbrainer.ui.tui.wizard_files import Answers, write_project
from overbrainer.ui.tui.wizard_local import LocalAsk, check_local
from overbrainer.ui.tui.wizard_screen import keys_hint, lines


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
        look = look_of(os.environ)
        self.event_loop, self.main = text_screen(self.body, self.footer, self.on_key, screen, look)
        self.nursery: trio.Nursery | None = None
        self.listing_scope: trio.CancelScope | None = None

    def on_key(self, key: str | tuple[object, ...]) -> bool:
        """Each key goes through the pure wizard; a confirmed summary writes the project."""
        if isinstance(key, str):
            self.update(wizard_key(self.state, key))
        return True

    def update(self, state: Wizard) -> None:
        """Take `state`, start the lookups or the write it asks for, redraw, end when over."""
        if self.nursery is not None:
            state = self._look_up(state, self.nursery)
        self.state = state
        if state.submit and self.nursery is not None:
            self.nursery.start_soon(self._write)
        if state.quit or state.start_auto is not None:
            self.done.set()
        self.draw()

    def _look_up(self, state: Wizard, nursery: trio.Nursery) -> Wizard:
        """Start asking for the model list or the estimate where `state` wants one; the state
        that waits for them. The wizard goes on meanwhile: neither ever holds a key back."""
        ask = wanted_listing(state)
        if ask is not None:
            state = attrs.evolve(state, listing_for=ask, listing=None)
            if self.listing_scope is not None:
                self.listing_scope.cancel()  # its answer would be for other answers
            self.listing_scope = trio.CancelScope()
            nursery.start_soon(self._list_models, ask, self.listing_scope)
        local = wanted_local(state)
        if local is not None:
            state = attrs.evolve(state, local_for=local, local=None)
            nursery.start_soon(self._check_local, local, answers(state))
        chosen = wanted_estimate(state)
        if chosen is not None:
            state = attrs.evolve(state, estimate_for=chosen, estimate=None)
            nursery.start_soon(self._estimate, chosen)
        return state

    async def _list_models(self, ask: ProviderAsk, scope: trio.CancelScope) -> None:
        with scope:
            found = await fetch_listing(ask)
            if self.state.listing_for == ask:
                self.update(attrs.evolve(self.state, listing=found))

    async def _check_local(self, ask: LocalAsk, chosen: Answers) -> None:
        found = await check_local(self.root, chosen)
        if self.state.local_for == ask:
            self.update(attrs.evolve(self.state, local=found))

    async def _estimate(self, chosen: Answers) -> None:
        found = await trio.to_thread.run_sync(estimate_answers, self.root, chosen)
        if self.state.estimate_for == chosen:
            self.update(attrs.evolve(self.state, estimate=found))

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
