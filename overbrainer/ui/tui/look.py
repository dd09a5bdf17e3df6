"""How the TUI looks: its colour level and palette, and how much moves on screen.

Read once from the environment at start (`OVERBRAINER_TUI_COLOR`, `OVERBRAINER_TUI_MOTION`,
`NO_COLOR`, `COLORTERM`, `TERM`, `SSH_CONNECTION`, `SSH_TTY`); an unknown value of an
`OVERBRAINER_TUI_*` variable is ignored with a warning.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

COLOR_VARIABLE = "OVERBRAINER_TUI_COLOR"
MOTION_VARIABLE = "OVERBRAINER_TUI_MOTION"


class ColorLevel(enum.Enum):
    """Colours the terminal is drawn with."""

    TRUECOLOR = "truecolor"
    """24-bit: the TUI's own dark crimson background."""
    C256 = "256"
    """256 colours: the same theme, in the nearest of them."""
    C16 = "16"
    """The 16 named colours on the terminal's own background and palette."""
    MONO = "mono"
    """No colour at all (`NO_COLOR`): bold and reverse video only."""

    @property
    def colors(self) -> int:
        """The colour count urwid's screen is told."""
        return {"truecolor": 2**24, "256": 256, "16": 16, "mono": 1}[self.value]


class Motion(enum.Enum):
    """What moves on screen."""

    ON = "on"
    REDUCED = "reduced"
    """Spinners and bars only (the TUI has no other motion: it is the same as `on`)."""
    OFF = "off"
    """Nothing moves: no spinner."""


@attrs.frozen
class Look:
    """The colour level and motion in effect, and the warnings the environment caused."""

    color: ColorLevel
    motion: Motion = Motion.ON
    warnings: tuple[str, ...] = ()


def _set(environ: Mapping[str, str], name: str) -> str:
    return environ.get(name, "").strip()


def look_of(environ: Mapping[str, str]) -> Look:
    """The look `environ` asks for (see the module)."""
    warnings: list[str] = []
    asked_color = _set(environ, COLOR_VARIABLE).lower()
    asked_motion = _set(environ, MOTION_VARIABLE).lower()
    forced: ColorLevel | None = None
    if asked_color:
        if asked_color in ("truecolor", "256", "16"):
            forced = ColorLevel(asked_color)
        else:
            warnings.append(
                f"{COLOR_VARIABLE}={asked_color!r} is not truecolor, 256 or 16: ignored"
            )
    motion: Motion | None = None
    if asked_motion:
        if asked_motion in ("on", "reduced", "off"):
            motion = Motion(asked_motion)
        else:
            warnings.append(
                f"{MOTION_VARIABLE}={asked_motion!r} is not on, reduced or off: ignored"
            )
    if _set(environ, "NO_COLOR"):  # no-color.org: set and not empty
        return Look(ColorLevel.MONO, Motion.OFF, tuple(warnings))
    if forced is None:
        forced = _detected(environ)
    if motion is None:
        over_ssh = _set(environ, "SSH_CONNECTION") or _set(environ, "SSH_TTY")
        motion = Motion.REDUCED if over_ssh else Motion.ON
    return Look(forced, motion, tuple(warnings))


def _detected(environ: Mapping[str, str]) -> ColorLevel:
    if _set(environ, "COLORTERM").lower() in ("truecolor", "24bit"):
        return ColorLevel.TRUECOLOR
    if "256color" in _set(environ, "TERM"):
        return ColorLevel.C256
    return ColorLevel.C16


# (name, 16-colour fg, 16-colour bg, mono, 256-colour fg, 256-colour bg, 24-bit fg, 24-bit bg)
_THEME: tuple[tuple[str, str, str, str, str, str, str, str], ...] = (
    ("body", "default", "default", "default", "h252", "h52", "#e8dede", "#2a0a12"),
    ("tab", "light gray", "dark blue", "default", "h252", "h88", "#e8dede", "#6b1426"),
    ("tab_on", "black", "light cyan", "standout", "h16", "h210", "#1a0508", "#f29aa8"),
    ("title", "yellow,bold", "", "bold", "h221,bold", "h52", "#f5c96b,bold", "#2a0a12"),
    ("selected", "black", "light gray", "standout", "h16", "h181", "#1a0508", "#d9b8bd"),
    ("status", "light green", "", "default", "h120", "h52", "#8fe39a", "#2a0a12"),
    ("keys", "dark cyan", "", "default", "h116", "h52", "#86d0d6", "#2a0a12"),
    ("error", "light red", "", "bold", "h203", "h52", "#ff6b6b", "#2a0a12"),
    ("warn", "yellow", "", "bold", "h221", "h52", "#ffd35a", "#2a0a12"),
    ("gauge", "light green", "", "default", "h120", "h52", "#8fe39a", "#2a0a12"),
    ("spark", "dark cyan", "", "default", "h116", "h52", "#86d0d6", "#2a0a12"),
    ("chart", "light cyan", "", "default", "h159", "h52", "#b8eef2", "#2a0a12"),
)


PaletteEntry = tuple[str, str, str] | tuple[str, str, str, str, str, str]


def palette(level: ColorLevel) -> list[PaletteEntry]:
    """urwid's palette for `level`: the theme's colours in it, or attributes alone (mono)."""
    if level is ColorLevel.MONO:  # at one colour urwid draws the mono field
        return [(name, "default", "default", mono, "", "") for name, _, _, mono, *_ in _THEME]
    if level is ColorLevel.C16:
        return [(name, fg, bg) for name, fg, bg, *_ in _THEME]
    high = level is ColorLevel.C256
    return [
        (name, fg, bg, mono, fg256 if high else fg24, bg256 if high else bg24)
        for name, fg, bg, mono, fg256, bg256, fg24, bg24 in _THEME
    ]


SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def working_mark(motion: Motion, now: float) -> str:
    """The mark before the status while work runs: a spinner frame at `now` ("" when off)."""
    if motion is Motion.OFF:
        return ""
    return SPINNER[int(now * 10) % len(SPINNER)]
