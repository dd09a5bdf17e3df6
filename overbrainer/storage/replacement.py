"""`--force` as replacement: new records are appended, old ones dropped once replaced.

A record replaces an earlier record of the same ID (the later line wins), and an item's old
records that no new record took over are dropped once the item's new records are complete
(`ForceState.complete`). `settle` makes the data file say that on its own: it writes the state
first, then compacts the file through the one atomic writer, so at every instant a reader that
applies `current` sees each item's old records or its new ones, never neither. Blocking: the
stages call these in worker threads.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import attrs

from overbrainer.storage.force_state import (
    ForceState,
    load_force_state,
    open_force_state,
    save_force_state,
)
from overbrainer.storage.jsonl import file_stamp, read_records, read_records_at, rewrite_from

T = TypeVar("T")

Head = tuple[str, str, str]
"""A record's ID, topic and item key (the unit `--force` replaces)."""


@attrs.frozen
class RecordKind:
    """One data file `--force` can replace records of."""

    data: Path
    state: Path
    head: Callable[[str], Head]
    single: bool
    """Each item is one record whose replacement has the same ID (answers): once a later
    record of the ID is stored, the item is replaced."""


def current(
    records: Iterable[T], id_of: Callable[[T], str], dropped: Iterable[str] = ()
) -> list[T]:
    """The records a reader should see: the last record of each ID (at its own place), none
    whose ID is dropped."""
    gone = set(dropped)
    latest: dict[str, T] = {}
    for record in records:
        key = id_of(record)
        if key in gone:
            continue
        latest.pop(key, None)
        latest[key] = record
    return list(latest.values())


def dropped_ids(state: Path) -> set[str]:
    """The record IDs an unfinished force has dropped (empty when there is none)."""
    found = load_force_state(state)
    return set() if found is None else found.dropped


def read_current(
    data: Path, state: Path, parse: Callable[[str], T], id_of: Callable[[T], str]
) -> list[T]:
    """`read_records`, then `current` with the dropped IDs of the file's force state."""
    dropped = dropped_ids(state)
    return current(read_records(data, parse), id_of, dropped)


def _heads(kind: RecordKind) -> list[tuple[Head, int, int]]:
    return read_records_at(kind.data, lambda line, start, length: (kind.head(line), start, length))


def compact(kind: RecordKind, dropped: set[str]) -> list[Head]:
    """Rewrite the data file without superseded or dropped records (when it has any); the
    heads of the records it keeps."""
    stamp = file_stamp(kind.data)
    heads = _heads(kind)
    kept = current(heads, lambda entry: entry[0][0], dropped)
    if len(kept) != len(heads):
        rewrite_from(kind.data, kind.data, [(start, length) for _, start, length in kept], stamp)
    return [head for head, _, _ in kept]


def settle(kind: RecordKind, state: ForceState | None) -> None:
    """Mark replaced items, save the state, compact the file, save the state again.

    The state is saved before the compaction, so a crash between the two leaves records
    that readers already treat as gone; the compaction's result is saved after it.
    """
    if state is None:
        return
    counts = collections.Counter(head[0] for head, _, _ in _heads(kind))
    for topic, items in list(state.pending.items()):
        for key, olds in list(items.items()):
            left = [old for old in olds if counts[old] < 2]
            if kind.single and not left:
                state.complete(topic, key, set(olds))
            else:
                items[key] = left
    save_force_state(kind.state, state)
    if state.dropped or any(count > 1 for count in counts.values()):
        compact(kind, state.dropped)
        state.dropped.clear()
        save_force_state(kind.state, state)


def begin(
    kind: RecordKind, selected: frozenset[str], configured: frozenset[str], force: bool
) -> tuple[ForceState | None, bool]:
    """Settle an unfinished force; with `force`, extend it to the selected topics it does not
    cover yet (every stored item of theirs becomes pending). The state (None when no force is
    under way) and whether the file holds it all: a new force or a new topic of one is not
    saved here, but by the stage once it sends its first request (`save_force_state`), so
    that a run refused before that leaves no force behind.

    Topics no longer configured are left out of the force; their records stay as they are.
    """
    state, saved = open_force_state(kind.state, force, configured)
    if state is None:
        return None, False
    if saved:
        settle(kind, state)
    new = selected - state.topics if force else frozenset()
    if new:
        for record_id, topic, key in compact(kind, set()):
            if topic in new:
                state.items(topic).setdefault(key, []).append(record_id)
        state.topics |= new
    if state.finished and not force:
        return None, saved
    return state, saved and not new
