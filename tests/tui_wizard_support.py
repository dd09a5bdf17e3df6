"""Keys into the pure init wizard: its state after each."""

from __future__ import annotations

from overbrainer.ui.tui.wizard import Wizard, wizard_key


def press(state: Wizard, *keys: str) -> Wizard:
    """`state` after `keys`, pressed in order."""
    for key in keys:
        state = wizard_key(state, key)
    return state


def typed(state: Wizard, text: str) -> Wizard:
    """`state` after typing `text`, one key a character."""
    return press(state, *text)
