"""`ReasoningWatch`: a parent asked for reasoning whose first answers carry none stops `answers`.

A parent with `reasoning = true` that returns no reasoning at all (a vLLM or llama-server
without its reasoning parser, a mock) makes every answer `no_raw_reasoning`: paid for, never
trained on. The rule, over the first `WINDOW` answers a run gets: the stage stops when its first
`FIRST` answers all carry none, or as soon as `LIMIT` of them (20 % of `WINDOW`) carry none.
Later answers are not watched: by then the parent has shown that it reasons.

An answer whose reasoning is a summary or redacted carries some: that parent hides its
reasoning, which `answers.hiding_warning` says before the first request, and such a parent is
not watched (every answer is excluded there by design, as before).
"""

from __future__ import annotations

import attrs

from overbrainer.llm import LlmError
from overbrainer.model.errors import EXIT_USAGE
from overbrainer.model.finish import ReasoningKind

FIRST = 5
"""The first answers that, all without reasoning, stop the stage."""
WINDOW = 50
"""The answers watched: the first of each run."""
LIMIT = 10
"""Answers without reasoning among the first `WINDOW` that stop the stage (20 %)."""


class NoReasoning(LlmError):
    """The role asks for reasoning and its model returns none: a setting to fix (exit 2)."""

    exit_code = EXIT_USAGE

    def __init__(self, role: str, model: str, missing: int, seen: int) -> None:
        super().__init__(
            f"the {role} model `{model}` returned no reasoning in {missing} of its first {seen} "
            f"answers, though `[roles.{role}] reasoning = true`: set `reasoning = false` for "
            f"the {role} in overbrainer.toml, or enable the server's reasoning parser "
            "(vLLM `--reasoning-parser`, llama-server `--reasoning-format`)"
        )

    @property
    def stops_stage(self) -> bool:
        return True


@attrs.define
class ReasoningWatch:
    """Counts the reasoning of a run's first answers; says when the stage should stop."""

    role: str
    model: str
    seen: int = 0
    missing: int = 0

    def answered(self, kind: ReasoningKind) -> NoReasoning | None:
        """Count one answer's reasoning; the error to stop with when this answer meets the rule
        (once), else None."""
        if self.seen >= WINDOW:
            return None
        self.seen += 1
        if kind is not ReasoningKind.NONE:
            return None
        self.missing += 1
        if self.missing == LIMIT or (self.seen == FIRST and self.missing == FIRST):
            return NoReasoning(self.role, self.model, self.missing, self.seen)
        return None


def reasoning_watch(role: str, model: str, asks: bool, hides: bool) -> ReasoningWatch | None:
    """The watch of a role's answers: only for one that asks for reasoning (`asks`) from a
    model that may return it raw (not `hides`)."""
    return ReasoningWatch(role, model) if asks and not hides else None
