"""Driving the TUI's pure state machine in tests: messages in, the last state and effects out."""

from __future__ import annotations

from overbrainer.ui.tui import app
from overbrainer.ui.tui.state import Effect, Key, Msg, State


def feed(state: State, *messages: Msg) -> tuple[State, list[Effect]]:
    """Apply `messages` in turn; the last state and every effect, in order."""
    effects: list[Effect] = []
    for message in messages:
        state, new = app.update(state, message)
        effects.extend(new)
    return state, effects


def keys(state: State, *names: str) -> tuple[State, list[Effect]]:
    """`feed` with one Key message per name."""
    return feed(state, *(Key(name) for name in names))
