"""The Dataset view's keys (move, edit or delete a record) and its selection across reads."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from overbrainer.ui.tui.actions import Result, move, refuse_busy, spawn
from overbrainer.ui.tui.dataset_index import PagedTree
from overbrainer.ui.tui.messages import Rekeyed
from overbrainer.ui.tui.snapshot import TreeRow
from overbrainer.ui.tui.state import State
from overbrainer.ui.tui.task_spec import TaskKind, TaskSpec

DELETE_LINES = {
    "subtopics": "its questions and their answers go too; it is rejected: never generated again",
    "questions": "its answer goes too; it is rejected: never generated again",
    "answers": "the question stays: `overbrainer answers` asks it again",
}
TOPIC_EDIT = "a topic is edited in overbrainer.toml (Project view, e)"


SEARCHED = 256
"""Rows either side of the old selection where a read tree looks for its record: enough for
an edit's move in a small dataset, and a page or two of reads in a big one."""


def same_row(old: Sequence[TreeRow], index: int, new: Sequence[TreeRow]) -> int:
    """The Dataset selection in a new tree: the same record where it still is nearby (an
    edited one moves to the end of its file), else the same place."""
    kept = min(index, max(len(new) - 1, 0))
    if not old or index >= len(old):
        return kept
    row = old[index]
    key = (row.file, row.id or row.text)
    near = range(max(index - SEARCHED, 0), min(index + SEARCHED, len(new)))
    return next((at for at in near if (new[at].file, new[at].id or new[at].text) == key), kept)


def rekeyed(state: State, message: Rekeyed) -> State:
    """The tree with the record's new ID, so that the next read keeps it selected."""
    old = state.snapshot.tree
    tree: Sequence[TreeRow]
    if isinstance(old, PagedTree):
        tree = old.renaming(message.file, message.old_id, message.new_id)
    else:
        tree = tuple(
            attrs.evolve(row, id=message.new_id)
            if (row.file, row.id) == (message.file, message.old_id)
            else row
            for row in old
        )
    return attrs.evolve(state, snapshot=attrs.evolve(state.snapshot, tree=tree))


def dataset_keys(state: State, key: str) -> Result:
    """The Dataset view's keys: move, `e` edit, `d` delete (after a confirmation)."""
    tree = state.snapshot.tree
    moved = move(state.tree_index, key, len(tree))
    if moved is not None:
        return attrs.evolve(state, tree_index=moved), []
    if key == "page down":
        return attrs.evolve(state, tree_index=min(state.tree_index + 10, max(len(tree) - 1, 0))), []
    if key == "page up":
        return attrs.evolve(state, tree_index=max(state.tree_index - 10, 0)), []
    if key in ("e", "d") and tree:
        refused = refuse_busy(state)
        if refused is not None:
            return refused, []
        row = tree[min(state.tree_index, len(tree) - 1)]
        if not row.file:
            return attrs.evolve(state, status=TOPIC_EDIT), []
        noun = row.file.removesuffix("s")
        if key == "e":
            spec = TaskSpec(TaskKind.EDIT, record_file=row.file, record_id=row.id)
            return spawn(attrs.evolve(state, status=f"editing {noun} {row.id}"), spec)
        spec = TaskSpec(TaskKind.DELETE, record_file=row.file, record_id=row.id)
        lines = (f"delete {noun} {row.id}?", row.text[:70], DELETE_LINES[row.file])
        status = f"delete {noun} {row.id}? y deletes it, any other key does not"
        return attrs.evolve(state, confirm=lines, confirm_spec=spec, status=status), []
    return state, []
