"""Text drawings for the Training view: gauge bars, sparklines and a braille line chart."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

SPARKS = "▁▂▃▄▅▆▇█"
EVAL_MARK = "x"
"""Where an evaluation's loss falls on the chart (ASCII: one column wide on every terminal)."""
UNKNOWN = "unknown"
# Braille dot bits by (column, row) inside a 2x4 cell.
_DOTS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))

Point = tuple[float, float]
"""(x, y): a step and a loss."""


def sparkline(
    values: Sequence[float], width: int, low: float | None = None, high: float | None = None
) -> str:
    """The last `width` values as block characters, from `low` to `high` (default: their own
    lowest and highest)."""
    shown = values[-width:] if width > 0 else ()
    if not shown:
        return ""
    low = min(shown) if low is None else low
    high = max(shown) if high is None else high
    span = high - low or 1.0
    top = len(SPARKS) - 1
    return "".join(SPARKS[min(max(int((v - low) / span * top), 0), top)] for v in shown)


def gauge_bar(ratio: float | None, width: int) -> str:
    """`[████░░░░]` with `width` cells filled to `ratio` (0 to 1); `[unknown ]` when unknown."""
    if ratio is None:
        return f"[{UNKNOWN[:width]:^{width}}]"
    full = round(min(max(ratio, 0.0), 1.0) * width)
    return f"[{'█' * full}{'░' * (width - full)}]"


def axis_label(value: float) -> str:
    """A y-axis figure in at most four significant digits (`2.501`, `0.0123`)."""
    return f"{value:.4g}"


def _columns(points: Sequence[Point], x0: float, x1: float, dots: int) -> dict[int, float]:
    """The mean y of the points falling in each dot column."""
    sums: dict[int, list[float]] = {}
    span = x1 - x0
    for x, y in points:
        column = round((x - x0) / span * (dots - 1)) if span else 0
        sums.setdefault(column, []).append(y)
    return {column: sum(ys) / len(ys) for column, ys in sums.items()}


def _line(rows: dict[int, int]) -> set[tuple[int, int]]:
    """The dots of a line through each known column's row: straight across the columns between
    two known ones, and a vertical run wherever it moves more than one dot row."""
    known = sorted(rows)
    at = {known[0]: rows[known[0]]}
    for a, b in itertools.pairwise(known):
        for column in range(a + 1, b + 1):
            at[column] = round(rows[a] + (rows[b] - rows[a]) * (column - a) / (b - a))
    dots: set[tuple[int, int]] = set()
    previous: int | None = None
    for column in sorted(at):
        row = at[column]
        if previous is None or abs(row - previous) <= 1:
            dots.add((column, row))
        else:
            step = 1 if row > previous else -1
            dots.update((column, r) for r in range(previous + step, row + step, step))
        previous = row
    return dots


def loss_chart(
    losses: Sequence[Point], evals: Sequence[Point], width: int, height: int
) -> list[str]:
    """The losses as a braille line over steps, evaluation losses as `x`, in `height` rows and
    `width` columns with the y-axis' highest and lowest values on its left; then one axis row
    with the first and last step. Empty when there is nothing to draw."""
    every = [*losses, *evals]
    if not every or height < 1:
        return []
    x0, x1 = min(x for x, _ in every), max(x for x, _ in every)
    y0, y1 = min(y for _, y in every), max(y for _, y in every)
    top, bottom = axis_label(y1), axis_label(y0)
    label = max(len(top), len(bottom))
    cells = width - label - 1
    if cells < 2:
        return []
    dot_rows = height * 4
    span = y1 - y0

    def to_row(y: float) -> int:
        return round((y1 - y) / span * (dot_rows - 1)) if span else dot_rows // 2

    columns = _columns(losses, x0, x1, cells * 2)
    dots = _line({c: to_row(y) for c, y in columns.items()}) if columns else set()
    grid = [[0] * cells for _ in range(height)]
    for column, row in dots:
        grid[row // 4][column // 2] |= _DOTS[column % 2][row % 4]
    marks = {
        (to_row(y) // 4, column // 2) for column, y in _columns(evals, x0, x1, cells * 2).items()
    }
    named = {0: top, height - 1: bottom} if span else {to_row(y0) // 4: top}
    rows = []
    for index, bits in enumerate(grid):
        name = named.get(index, "")
        plot = "".join(
            EVAL_MARK if (index, at) in marks else chr(0x2800 + cell) if cell else " "
            for at, cell in enumerate(bits)
        )
        rows.append(f"{name:>{label}}{'┤' if name else '│'}{plot}")
    first, last = f"{x0:g}", f"{x1:g}"
    fill = cells - len(first) - len(last)
    axis = f"{first}{'─' * fill}{last}" if fill >= 1 and x1 > x0 else first[:cells]
    rows.append(f"{'':>{label}}└{axis:<{cells}}")
    return rows
