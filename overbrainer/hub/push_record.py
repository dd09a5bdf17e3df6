"""`runs/<id>/hub/push.json`: what the last push of a run delivered, and where."""

from __future__ import annotations

import attrs

from overbrainer.model import codec


@codec.record("push record", style=codec.Style.PRETTY, strict=False)
@attrs.frozen
class PushRecord(codec.JsonRecord):
    """The repository, its commit and URL, the files pushed, the visibility and when."""

    repo: str
    commit: str
    url: str
    files: tuple[str, ...]
    private: bool
    pushed: str
