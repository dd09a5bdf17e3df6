"""The state of an unfinished `--force`: which items still hold their old records.

`.overbrainer/force-<stage>.json` exists only while a force of that stage is unfinished or its
superseded records are not yet compacted away. The data files keep the reference's format, so
what they cannot say (which records are old, which are dropped) lives here:

    {"topics":["ownership"],"pending":{"ownership":{"<item>":["<old id>",…]}},"dropped":["<id>"]}

- `topics`: the topics the force covers (a repeated `--force` on them continues it);
- `pending`: per topic, each item not yet replaced, with the IDs of its old records (which
  stay current until the item's new records are complete);
- `dropped`: old record IDs of replaced items that no new record took over: readers ignore
  them until a compaction removes them from the data file;
- `started`: when the force sent its first request (UTC), said when a plain run continues it;
- `since`: `quality` only: the size of `quality.jsonl` then, so that a score written after it
  is a redone item's new score (`pending` holds the answers still to score again).

The file is written only once the forced stage sends its first request: a run refused before
that (the spend cap, Ctrl-C, bad input) leaves no force behind.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import attrs

from overbrainer.model import codec
from overbrainer.storage.atomic import sync_directory, write_atomic
from overbrainer.storage.errors import DataError, DiskFull, InvalidRecord


@codec.record(
    "force state",
    strict=False,
    require=("topics", "pending", "dropped"),
    omit=("started", "since"),
)
@attrs.define
class ForceState(codec.JsonRecord):
    """An unfinished force of one stage (see the module docstring)."""

    topics: set[str] = attrs.field(factory=set)
    pending: dict[str, dict[str, list[str]]] = attrs.field(factory=dict)
    dropped: set[str] = attrs.field(factory=set)
    started: str | None = None
    since: int | None = None

    def items(self, topic: str) -> dict[str, list[str]]:
        """The pending items of `topic` (a live view: edits change the state)."""
        return self.pending.setdefault(topic, {})

    def pending_keys(self, topics: frozenset[str] | set[str]) -> dict[str, list[str]]:
        """Every pending item of `topics`, with its old record IDs."""
        found: dict[str, list[str]] = {}
        for topic in topics:
            found.update(self.pending.get(topic, {}))
        return found

    def old_ids(self, topics: frozenset[str] | set[str]) -> set[str]:
        """The IDs of the old records still current for pending items of `topics`."""
        return {old for olds in self.pending_keys(topics).values() for old in olds}

    def complete(self, topic: str, key: str, kept: set[str]) -> None:
        """Item `key` has its new records: its old ones not in `kept` are dropped."""
        olds = self.pending.get(topic, {}).pop(key, None)
        if olds is not None:
            self.dropped.update(old for old in olds if old not in kept)
        self._prune()

    def forget(self, key: str) -> None:
        """Stop replacing item `key` (whatever its topic): its old records simply stay."""
        for items in self.pending.values():
            items.pop(key, None)
        self._prune()

    def _prune(self) -> None:
        for topic in [topic for topic, items in self.pending.items() if not items]:
            del self.pending[topic]

    @property
    def finished(self) -> bool:
        """Nothing left to replace or to compact: the state file can go."""
        self._prune()
        return not self.pending and not self.dropped


def load_force_state(path: Path) -> ForceState | None:
    """The state at `path`, or None when no force is unfinished; DataError when unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise DataError(f"cannot read {path}", str(error)) from None
    try:
        return ForceState.from_json(text)
    except ValueError:
        raise InvalidRecord(
            f"{path}: not a valid force state (delete it to abandon the unfinished --force)"
        ) from None


def open_force_state(
    path: Path, force: bool, configured: frozenset[str]
) -> tuple[ForceState | None, bool]:
    """The unfinished force at `path` (its topics no longer configured left out), a new empty
    one for `force`, or None; and whether the state was saved (an unfinished one). Blocking."""
    state = load_force_state(path)
    saved = state is not None
    if state is None:
        return (ForceState(), False) if force else (None, False)
    for topic in list(state.pending):
        if topic not in configured:
            del state.pending[topic]
    state.topics &= configured
    return state, saved


def save_force_state(path: Path, state: ForceState) -> None:
    """Write `state` atomically, or remove the file once the force is finished."""
    try:
        if state.finished:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                sync_directory(path.parent)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, state.to_json() + "\n")
    except DiskFull:
        raise
    except OSError as error:
        raise DataError(f"cannot write {path}", error.strerror or type(error).__name__) from None
