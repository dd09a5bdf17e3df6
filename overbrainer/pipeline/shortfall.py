"""Items a stage ended short of their target count, told once more when the stage ends."""

from __future__ import annotations

import logging

import attrs

from overbrainer.events.types import Stage

log = logging.getLogger(__name__)

STAGE_SHORT = (
    "{stage}: {items} stopped short: {have} of {want} {records}; "
    "run `overbrainer {stage}` again to ask for the rest"
)


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


@attrs.define
class Shortfall:
    """The short items of one stage run: each a `topic` or `subtopic` with too few records."""

    item: str
    records: str
    items: int = 0
    have: int = 0
    want: int = 0

    def add(self, have: int, target: int) -> None:
        """An item that ended (done) holding `have` of its `target` records."""
        if have < target:
            self.items += 1
            self.have += have
            self.want += target

    def message(self, stage: Stage) -> str | None:
        """The stage's closing warning, or None when no item was short."""
        if not self.items:
            return None
        return STAGE_SHORT.format(
            stage=stage.value,
            items=_counted(self.items, self.item),
            have=self.have,
            want=self.want,
            records=self.records,
        )

    def warn(self, stage: Stage) -> None:
        """Log the closing warning when some item was short."""
        message = self.message(stage)
        if message is not None:
            log.warning(message)
