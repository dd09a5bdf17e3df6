"""The Dataset tree of a project of any size: line offsets in memory, records read a page at a
time from disk as the view scrolls (blocking: built in a worker thread).

Building it reads only each line's ID (and a question's subtopic ID) where our writer's compact
shape gives them; a line in another shape is parsed in full, and a line that does not parse is
left out, as the tree always left it out. A row is one integer: a record's byte offset (or a
topic's or subtopic's index) and its kind, so a million answers hold about 16 MB of rows.
"""

from __future__ import annotations

import contextlib
import os
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, overload

import attrs

from overbrainer.storage import (
    BlockLines,
    Example,
    Key,
    Question,
    Subtopic,
    fast_answer_id,
    fast_place,
    id_key,
)
from overbrainer.ui.tui.snapshot import TreeRow

PAGE = 64
"""Rows read from disk together; a few pages are kept."""
_PAGES_KEPT = 8

_TOPIC, _SUBTOPIC, _QUESTION, _ANSWER = range(4)


def _lines(path: Path) -> Iterator[tuple[int, bytes, int, int]]:
    """Each non-empty line of `path` as `BlockLines` gives it, its unterminated last line
    included; nothing when the file is missing."""
    lines = BlockLines(path)
    with contextlib.suppress(FileNotFoundError):
        for line in lines:
            if line[2] < line[3]:
                yield line
    if lines.tail.strip():
        yield lines.tail_offset, lines.tail, 0, len(lines.tail)


def _answer_key(buffer: bytes, start: int, end: int) -> Key | None:
    try:
        key = fast_answer_id(buffer, start, end)
        return key if key is not None else id_key(Example.from_json(_text(buffer, start, end)).id)
    except Exception:  # a torn or foreign line: not in the tree
        return None


def _question_keys(buffer: bytes, start: int, end: int) -> tuple[Key, Key] | None:
    try:
        place = fast_place(buffer, start, end)
        if place is not None:
            return place[0], place[2]
        question = Question.from_json(_text(buffer, start, end))
    except Exception:  # a torn or foreign line: not in the tree
        return None
    return id_key(question.id), id_key(question.subtopic_id)


def _text(buffer: bytes, start: int, end: int) -> str:
    return buffer[start:end].decode("utf-8")


def _subtopics(path: Path) -> list[Subtopic]:
    out: list[Subtopic] = []
    for _, buffer, start, end in _lines(path):
        with contextlib.suppress(Exception):
            out.append(Subtopic.from_json(_text(buffer, start, end)))
    return out


@attrs.frozen(eq=False)
class PagedTree(Sequence[TreeRow]):
    """The Dataset tree's rows, each read from its data file when first shown."""

    files: dict[str, Path]
    topics: tuple[tuple[str, int], ...]
    """Each topic's name and number of subtopics."""
    subtopics: tuple[tuple[str, str, int], ...]
    """Each subtopic's name, ID and number of questions."""
    rows: array[int]
    inodes: dict[str, int] = attrs.field(factory=dict)
    """Each file's inode when the tree was read: a file replaced since (an edit, a delete) is
    not read at the old offsets."""
    renamed: tuple[tuple[str, str, str], ...] = ()
    """(file, old ID, new ID) of records edited since the tree was read."""
    _pages: dict[int, tuple[TreeRow, ...]] = attrs.field(factory=dict)

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, at: int) -> TreeRow: ...
    @overload
    def __getitem__(self, at: slice) -> Sequence[TreeRow]: ...
    def __getitem__(self, at: int | slice) -> TreeRow | Sequence[TreeRow]:
        if isinstance(at, slice):
            return tuple(self[i] for i in range(*at.indices(len(self))))
        if at < 0:
            at += len(self)
        if not 0 <= at < len(self):
            raise IndexError(at)
        number = at // PAGE
        page = self._pages.pop(number, None)
        if page is None:
            page = self._read_page(number)
        self._pages[number] = page  # the newest last: the oldest goes first
        return page[at % PAGE]

    def renaming(self, file: str, old_id: str, new_id: str) -> PagedTree:
        """The same tree, showing `new_id` where a row of `file` shows `old_id` (the pages read
        are kept: the file changed, and the selection is found in them)."""
        tree = attrs.evolve(self, renamed=(*self.renamed, (file, old_id, new_id)), pages={})
        for number, page in self._pages.items():
            tree._pages[number] = tuple(tree._renamed(row) for row in page)
        return tree

    def _read_page(self, number: int) -> tuple[TreeRow, ...]:
        if len(self._pages) >= _PAGES_KEPT:
            self._pages.pop(next(iter(self._pages)))
        first = number * PAGE
        values = self.rows[first : first + PAGE]
        opened: dict[str, BinaryIO] = {}
        try:
            page = tuple(self._row(value, opened) for value in values)
        finally:
            for file in opened.values():
                file.close()
        return page

    def _row(self, value: int, opened: dict[str, BinaryIO]) -> TreeRow:
        kind, place = value & 3, value >> 2
        if kind == _TOPIC:
            name, count = self.topics[place]
            return TreeRow(0, name, f"{count} subtopics")
        if kind == _SUBTOPIC:
            name, sub_id, count = self.subtopics[place]
            return self._renamed(TreeRow(1, name, f"{count} questions", "subtopics", sub_id))
        name = "questions" if kind == _QUESTION else "answers"
        line = self._line(name, place, opened)
        try:
            if kind == _QUESTION:
                question = Question.from_json(line)
                row = TreeRow(2, question.text, "", "questions", question.id)
            else:
                row = answer_row(Example.from_json(line))
        except Exception:  # the file changed since the tree was read: the next read fixes it
            row = TreeRow(kind, "(changed on disk)", "", name)
        return self._renamed(row)

    def _line(self, name: str, offset: int, opened: dict[str, BinaryIO]) -> str:
        file = opened.get(name)
        if file is None:
            try:
                file = opened[name] = self.files[name].open("rb")
            except OSError:
                return ""
        if os.fstat(file.fileno()).st_ino != self.inodes.get(name):
            return ""
        file.seek(offset)
        return file.readline().decode("utf-8", errors="replace")

    def _renamed(self, row: TreeRow) -> TreeRow:
        for file, old, new in self.renamed:
            if (row.file, row.id) == (file, old):
                row = attrs.evolve(row, id=new)
        return row


def answer_row(answer: Example) -> TreeRow:
    """An answer's row: its reply on one line, and its model or why it is excluded."""
    reply = answer.messages[-1].content if answer.messages else ""
    excluded = answer.meta.excluded
    detail = f"excluded: {excluded.value}" if excluded is not None else answer.meta.model
    return TreeRow(3, " ".join(reply.split()), detail, "answers", answer.id)


Stamp = tuple[tuple[int, int, int] | None, ...]
_last: list[tuple[Stamp, PagedTree]] = []
"""The tree last read and its files' stamps: a LOAD with the data unchanged reads nothing."""


def _stamp(files: dict[str, Path]) -> Stamp:
    stamps: list[tuple[int, int, int] | None] = []
    for name in ("subtopics", "questions", "answers"):
        try:
            stat = files[name].stat()
        except OSError:
            stamps.append(None)
            continue
        stamps.append((stat.st_ino, stat.st_size, stat.st_mtime_ns))
    return tuple(stamps)


def dataset_tree(files: dict[str, Path]) -> PagedTree:
    """`read_tree` of `files`, or the tree read last when none of them changed since."""
    stamp = _stamp(files)
    if _last and _last[0][0] == stamp and _last[0][1].files == files:
        return _last[0][1]
    tree = read_tree(files)
    _last[:] = [(stamp, tree)]
    return tree


def read_tree(files: dict[str, Path]) -> PagedTree:
    """The Dataset tree of the data files named `subtopics`, `questions` and `answers`."""
    inodes = {}
    for name in ("questions", "answers"):
        with contextlib.suppress(OSError):
            inodes[name] = files[name].stat().st_ino
    answers: dict[Key, int] = {}
    for offset, buffer, start, end in _lines(files["answers"]):
        key = _answer_key(buffer, start, end)
        if key is not None:
            answers[key] = offset
    by_subtopic: dict[Key, array[int]] = {}
    for offset, buffer, start, end in _lines(files["questions"]):
        keys = _question_keys(buffer, start, end)
        if keys is None:
            continue
        question, subtopic = keys
        rows = by_subtopic.get(subtopic)
        if rows is None:
            rows = by_subtopic[subtopic] = array("q")
        rows.append(offset << 2 | _QUESTION)
        answer = answers.get(question)
        if answer is not None:
            rows.append(answer << 2 | _ANSWER)
    del answers
    grouped: dict[str, list[Subtopic]] = {}
    for sub in _subtopics(files["subtopics"]):
        grouped.setdefault(sub.topic, []).append(sub)
    topics: list[tuple[str, int]] = []
    subtopics: list[tuple[str, str, int]] = []
    rows = array("q")
    for topic, subs in grouped.items():
        rows.append(len(topics) << 2 | _TOPIC)
        topics.append((topic, len(subs)))
        for sub in subs:
            asked = by_subtopic.get(id_key(sub.id), array("q"))
            rows.append(len(subtopics) << 2 | _SUBTOPIC)
            subtopics.append((sub.name, sub.id, sum(1 for v in asked if v & 3 == _QUESTION)))
            rows.extend(asked)
    return PagedTree(files, tuple(topics), tuple(subtopics), rows, inodes)
