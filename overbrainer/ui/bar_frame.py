"""The two lines every live bar draws (a stage's, a training job's), laid out in one place.

rich is imported when a bar is drawn, not with the command line: most commands never draw one
and each spawned command would pay for it at start-up (docs/testing.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import RenderableType

BAR_WIDTH = 30


def two_lines(
    label: str, total: int | None, completed: int, words: str, detail: str
) -> RenderableType:
    """`label`, a bar of `completed` of `total` (a pulse while unknown) and `words`; then the
    dimmed `detail` below."""
    from rich.console import Group
    from rich.progress_bar import ProgressBar
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 1))
    grid.add_row(
        Text(f"{label:<9}", style="bold"),
        ProgressBar(total=None if total is None else max(total, 1), completed=completed,
                    width=BAR_WIDTH),
        Text(words),
    )  # fmt: skip
    return Group(grid, Text(f"  {detail}", style="dim"))
