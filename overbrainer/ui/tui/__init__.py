"""The terminal UI: `overbrainer tui` on urwid, inside trio.run."""
