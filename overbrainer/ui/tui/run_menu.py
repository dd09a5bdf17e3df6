"""The Pipeline view's `r` menu: which topic a stage runs on, and whether with `--force`."""

from __future__ import annotations

import enum

import attrs

from overbrainer.events.types import Stage
from overbrainer.ui.tui.task_spec import TaskKind, TaskSpec

FORCE_WORDS = {
    Stage.SUBTOPICS: "every selected topic's subtopics are asked for again (paid)",
    Stage.QUESTIONS: "every selected subtopic's questions are asked for again (paid)",
    Stage.ANSWERS: "every selected question is answered again (paid)",
    Stage.QUALITY: "every selected answer is scored again (paid)",
}
"""What `--force` does, per stage (split has no `--force`)."""
NO_FORCE = "split has no --force: it always rewrites train/eval from what is stored"


@attrs.frozen
class RunMenu:
    """What `r` offers before a stage runs: the topic (None: all) and `--force`."""

    stage: Stage
    topic: str | None = None
    force: bool = False

    def spec(self) -> TaskSpec:
        """The stage command the menu stands for now."""
        return TaskSpec(TaskKind.STAGE, stage=self.stage, topic=self.topic, force=self.force)


class Choice(enum.Enum):
    """What a key does to the menu."""

    KEEP = "keep"
    RUN = "run"
    CLOSE = "close"


def menu_lines(menu: RunMenu, topics: tuple[str, ...]) -> tuple[str, ...]:
    """The menu: its title, then one line per option with the key that changes it."""
    spec = menu.spec()
    topic = menu.topic if menu.topic is not None else f"all ({len(topics)})"
    lines = [f"run {spec.label}?", f"t/←/→ topic: {topic}"]
    if menu.stage is Stage.SPLIT:
        lines.append(f"f --force: {NO_FORCE}")
    else:
        state = f"on: {FORCE_WORDS[menu.stage]}" if menu.force else "off: only what is missing"
        lines.append(f"f --force: {state}")
    lines.append("r or Enter runs it, Esc or n does not")
    return tuple(lines)


def menu_key(menu: RunMenu, key: str, topics: tuple[str, ...]) -> tuple[RunMenu, Choice, str]:
    """The menu after `key`, what to do with it, and a status line ("" leaves it)."""
    if key in ("r", "enter", "y"):
        return menu, Choice.RUN, ""
    if key in ("esc", "n", "q"):
        return menu, Choice.CLOSE, "not run"
    if key in ("t", "right", "left"):
        choices: list[str | None] = [None, *topics]
        at = choices.index(menu.topic) if menu.topic in choices else 0
        step = -1 if key == "left" else 1
        return attrs.evolve(menu, topic=choices[(at + step) % len(choices)]), Choice.KEEP, ""
    if key == "f":
        if menu.stage is Stage.SPLIT:
            return menu, Choice.KEEP, NO_FORCE
        return attrs.evolve(menu, force=not menu.force), Choice.KEEP, ""
    return menu, Choice.KEEP, ""
