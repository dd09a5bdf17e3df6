"""The two lines every live bar draws (a stage's, a training job's), laid out in one place."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

BAR_WIDTH = 30


def two_lines(
    label: str, total: int | None, completed: int, words: str, detail: str
) -> RenderableType:
    """`label`, a bar of `completed` of `total` (a pulse while unknown) and `words`; then the
    dimmed `detail` below."""
    grid = Table.grid(padding=(0, 1))
    grid.add_row(
        Text(f"{label:<9}", style="bold"),
        ProgressBar(total=None if total is None else max(total, 1), completed=completed,
                    width=BAR_WIDTH),
        Text(words),
    )  # fmt: skip
    return Group(grid, Text(f"  {detail}", style="dim"))
