"""`UnscoredStreak`: a judge that gives no parsable score for `NEVER_SCORES` items in a row stops.

A judge model that cannot follow its prompt (it never writes `{"score": N}`, or the verdict
format) would be asked again for every item, each ask paid for and none used. After
`NEVER_SCORES` items in a row that ended without one (each already asked twice), the stage
stops with one line naming the judge, its model and the start of its last reply.
"""

from __future__ import annotations

import attrs

from overbrainer.llm import LlmError
from overbrainer.model.errors import EXIT_USAGE

NEVER_SCORES = 10
"""Items in a row without a parsable score from the judge that stop the stage."""
EXCERPT = 80
"""Characters of the judge's last reply the stop line quotes."""


def excerpt(reply: str) -> str:
    """The start of `reply` on one line, in quotes; `an empty reply` for nothing."""
    text = " ".join(reply.split())
    if not text:
        return "an empty reply"
    return f'"{text[:EXCERPT]}…"' if len(text) > EXCERPT else f'"{text}"'


class JudgeNeverScores(LlmError):
    """The judge's replies hold no parsable score, item after item: a setting to fix (exit 2)."""

    exit_code = EXIT_USAGE

    def __init__(self, streak: UnscoredStreak, last: str) -> None:
        # Known secrets in the excerpt are masked by `OverbrainerError`.
        super().__init__(
            f"the {streak.judge} model `{streak.model}` gave no parsable {streak.what} for "
            f"{streak.count} items in a row "
            f"(its last reply: {excerpt(last)}): {streak.fix}"
        )

    @property
    def stops_stage(self) -> bool:
        return True


@attrs.define
class UnscoredStreak:
    """The items in a row a judge left without a parsable score."""

    judge: str
    """The judge as the stop line names it: `[quality] judge`, `[roles.judge]`."""
    model: str
    what: str
    """What a reply should hold: `score`, `verdict`."""
    fix: str
    """What to change, said at the end of the stop line."""
    count: int = 0
    stop: JudgeNeverScores | None = None
    """The error to stop with, once the streak was `NEVER_SCORES` long."""

    def scored(self) -> None:
        """An item got its score: the streak ends."""
        self.count = 0

    def unscored(self, last_reply: str) -> JudgeNeverScores | None:
        """An item ended without a score; the error to stop with when that makes the streak
        `NEVER_SCORES` long (once), else None."""
        self.count += 1
        if self.count != NEVER_SCORES or self.stop is not None:
            return None
        self.stop = JudgeNeverScores(self, last_reply)
        return self.stop
