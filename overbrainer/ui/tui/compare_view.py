"""The Compare view's layout, in one place: what the renderer draws and where the keys scroll
the detail to (its parts' first lines, its last page)."""

from __future__ import annotations

import textwrap

import attrs

from overbrainer.ui.tui.snapshot import COMPARE_FILTERS, CompareItem
from overbrainer.ui.tui.state import State

Markup = str | tuple[str, str]
Row = list[Markup]

NO_COMPARE = "no compare yet: C compares the newest exported run (`overbrainer export RUN` first)"
CHROME = 4
"""Screen rows that are not the view's body: header, status, keys and a divider."""
COMPARES_SHOWN = 4
"""Rows of the Compare view's list of compares."""
SIDE_BY_SIDE = 120
"""Columns from which the child and parent answers are shown side by side."""


@attrs.frozen
class CompareLayout:
    """The view above its detail pane, the detail's lines, where its parts start, and how many
    of its lines the pane shows."""

    lines: tuple[Row, ...]
    detail: tuple[Row, ...] = ()
    parts: tuple[int, ...] = ()
    """The first detail line of the question, the child answer, the parent answer and the
    judge reason (the two answers share one when side by side)."""
    room: int = 0

    @property
    def last_offset(self) -> int:
        """The offset that shows the detail's last page (0 when it fits)."""
        return max(len(self.detail) - self.room, 0)

    def clamp(self, offset: int) -> int:
        """`offset` within the detail: 0 up to its last page."""
        return min(max(offset, 0), self.last_offset)

    def next_part(self, offset: int) -> int:
        """The offset of the first part below `offset` (the last page when none is)."""
        return self.clamp(next((p for p in self.parts if p > offset), self.last_offset))

    def previous_part(self, offset: int) -> int:
        """The offset of the last part above `offset` (the top when none is)."""
        return self.clamp(max((p for p in self.parts if p < offset), default=0))


def _window(index: int, length: int, room: int) -> range:
    start = max(min(index - room // 2, length - room), 0)
    return range(start, min(start + room, length))


def one_line(text: str) -> str:
    """`text` with its runs of whitespace made one space."""
    return " ".join(text.split())


def _wrap(label: str, text: str, width: int) -> list[str]:
    return textwrap.wrap(f"{label}: {one_line(text)}", max(width, 10)) or [f"{label}:"]


def detail_parts(item: CompareItem, cols: int) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Question, child answer, parent answer, judge reason, whole (the view scrolls them), the
    answers side by side when wide; and the first line of each part."""
    child = item.child or f"(no answer{': ' + item.error if item.error else ''})"
    reason = f"{item.verdict}{': ' + item.reason if item.reason else ''}"
    question = _wrap("question", item.question, cols)
    judge = _wrap("judge", reason, cols)
    if cols >= SIDE_BY_SIDE:
        half = (cols - 3) // 2
        left = _wrap("child", child, half)
        right = _wrap("parent", item.parent, half)
        both = [
            f"{a:<{half}} │ {b}"
            for a, b in zip(
                left + [""] * (len(right) - len(left)),
                right + [""] * (len(left) - len(right)),
                strict=True,
            )
        ]
        starts: tuple[int, ...] = (0, len(question), len(question) + len(both))
    else:
        childs = _wrap("child", child, cols)
        both = childs + _wrap("parent", item.parent, cols)
        starts = (0, len(question), len(question) + len(childs), len(question) + len(both))
    return (*question, *both, *judge), starts


def compare_layout(state: State, height: int, cols: int) -> CompareLayout:
    """The Compare view in `height` rows of `cols` columns."""
    rows = state.snapshot.compares
    running: list[Row] = []
    task, progress = state.comparing(), state.compare_progress
    if task is not None and progress is not None:
        running = [[("title", "Running")], [f"  {task.spec.label}: {progress.label()}"]]
    if not rows:
        return CompareLayout((*running, [("title", "Compares")], [f"  {NO_COMPARE}"]))
    index = min(state.compare_index, len(rows) - 1)
    focus = "compares" if state.compare_focus == 0 else "questions"
    lines: list[Row] = [
        *running,
        [("title", f"Compares, newest first ({len(rows)}; k/j move the {focus})")],
    ]
    for at in _window(index, len(rows), COMPARES_SHOWN):
        row = rows[at]
        base = f" (vs base {row.base_percent})" if row.has_base else ""
        text = (
            f"{'▶' if at == index else ' '} {row.run}  {row.quantize:<7} {row.percent:>4} "
            f"win or tie{base}  {row.questions:>4} questions  judge {row.judge}  {row.id}"
        )
        lines.append([("selected", text)] if at == index else [text])
    selected = rows[index]
    lines.extend([[f"  {line}"] for line in selected.summary])
    bench = state.snapshot.bench_of(selected.run)
    if bench is not None:
        lines.append([f"  benchmarks ({bench.id}): {bench.verdict}"])
        lines.extend([[f"    {line}"] for line in bench.lines])
    items = state.compare_items()
    name = COMPARE_FILTERS[state.compare_filter][0]
    lines.append([("title", f"Questions: {name}, {len(items)} of {len(selected.items)}")])
    if not items:
        lines.append(["  none (f changes the filter)"])
        return CompareLayout(tuple(lines))
    item_index = min(state.item_index, len(items) - 1)
    detail_room = max(height - len(lines) - 4, 6)
    list_room = max(min(len(items), detail_room // 3), 2)
    for at in _window(item_index, len(items), list_room):
        item = items[at]
        arrow = "▶" if at == item_index else " "
        text = f"{arrow} {item.mark} {item.id}  {one_line(item.question)}"
        lines.append([("selected", text)] if at == item_index else [text])
    room = max(height - len(lines) - 1, 4)
    detail, parts = detail_parts(items[item_index], cols)
    return CompareLayout(tuple(lines), tuple([line] for line in detail), parts, room)


def screen_layout(state: State) -> CompareLayout:
    """The Compare view as the terminal the state last saw lays it out."""
    return compare_layout(state, state.rows - CHROME, state.cols)
