"""The Training view's system panel: one row per gauge, coloured by how full it is."""

from __future__ import annotations

from overbrainer.ui.tui.charts import gauge_bar, sparkline
from overbrainer.ui.tui.compare_view import Row
from overbrainer.ui.tui.machine import HISTORY, Gauge, Machine, gauges

WARN_AT = 0.85
ERROR_AT = 0.95
BAR = 12
"""Cells of a gauge's bar, inside its brackets."""
LABEL = 6
MIN_SPARK = 8
"""Narrowest sparkline drawn; the figures are cut to leave it room."""
_FIXED = 2 + LABEL + 1 + BAR + 2 + 5 + 3 + 1
"""Columns before the figures: indent, label, bar, percentage, mark, a space."""


def level(ratio: float | None) -> str:
    """The palette name of a share: `gauge` below 85 %, `warn` from 85 %, `error` from 95 %."""
    if ratio is not None and ratio >= ERROR_AT:
        return "error"
    if ratio is not None and ratio >= WARN_AT:
        return "warn"
    return "gauge"


def mark(ratio: float | None) -> str:
    """`!` from 85 %, `!!` from 95 %: the level without colour (`NO_COLOR`)."""
    return {"error": "!!", "warn": "!"}.get(level(ratio), "")


def gauge_row(gauge: Gauge, recent: tuple[float, ...], cols: int, figures_width: int) -> Row:
    """`  mem    [████░░░░░░░░]  35%     1.6/25.2G  ▁▂▂▃`, cut to `cols` columns."""
    spark_width = min(HISTORY, cols - _FIXED - figures_width - 2)
    if spark_width < MIN_SPARK:  # the figures give way: the bar and the trend matter more
        figures_width = max(cols - _FIXED - MIN_SPARK - 2, 0)
        spark_width = MIN_SPARK
    figures = gauge.figures
    if len(figures) > figures_width:
        figures = figures[: max(figures_width - 1, 0)] + "…"
    shown = " --%" if gauge.ratio is None else f"{round(gauge.ratio * 100):>3}%"
    style = level(gauge.ratio)
    return [
        f"  {gauge.label:<{LABEL}} ",
        (style, f"{gauge_bar(gauge.ratio, BAR)} {shown}"),
        (style, f" {mark(gauge.ratio):<2}"),
        f" {figures:<{figures_width}}  ",
        ("spark", sparkline(recent, spark_width, 0.0, 1.0)),
    ]


def panel_rows(machine: Machine, cols: int) -> list[Row]:
    """One row per gauge of the machine's latest sample, or why there is none."""
    sample = machine.sample
    if sample is None:
        return [["  no sample yet"]]
    found = gauges(sample)
    width = max((len(g.figures) for g in found), default=0)
    rows = [gauge_row(g, machine.recent(g.key), cols, width) for g in found]
    if not sample.gpus:
        rows.append([f"  {'gpu':<{LABEL}} none found (no NVML or nvidia-smi, or no NVIDIA GPU)"])
    if not found:
        rows.insert(0, ["  nothing measured"])
    return rows
