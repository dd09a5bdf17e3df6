"""The Training view: the runs, the loss chart and the system panel, fitted to the screen."""

from __future__ import annotations

from overbrainer.ui.tui.charts import EVAL_MARK, loss_chart
from overbrainer.ui.tui.compare_view import Row
from overbrainer.ui.tui.compares import latest_compare_line
from overbrainer.ui.tui.followed import Followed
from overbrainer.ui.tui.machine import Machine
from overbrainer.ui.tui.snapshot import RunRow
from overbrainer.ui.tui.state import State
from overbrainer.ui.tui.system_panel import panel_rows

MIN_CHART = 6
"""Rows of the loss chart however short the screen (its axis row not counted)."""
MAX_CHART = 30
RUNS_SHOWN = 3
"""Rows of the runs list kept before the chart and the panel take the rest."""
NO_LOSS = "  no loss yet (shown while a run is followed: t or a)"


def run_text(run: RunRow, followed: Followed | None, now: float, cols: int) -> str:
    """A run's row; a followed run's shows `step S/T` and, while running, its ETA (the
    created time gives way when the row would not fit: the run's ID holds it too)."""
    base = f"{run.id}  {run.state:<10} {run.target:<10}"
    full = f"{base} {run.created}"
    progress = followed.progress_words(now, run.state == "running") if followed else ""
    if not progress:
        return full
    if len(full) + 2 + len(progress) + 2 <= cols:
        return f"{full}  {progress}"
    return f"{base.rstrip()}  {progress}"


def _run_rows(state: State, cols: int) -> tuple[list[Row], int]:
    """Every run's rows (the run, its latest compare and bench, its pod notices) and the
    selected run's first row."""
    rows: list[Row] = []
    selected = 0
    for index, run in enumerate(state.visible_runs()):
        text = run_text(run, state.followed_of(run.id), state.now, cols)
        if index == state.run_index:
            selected = len(rows)
            rows.append([("selected", f"▶ {text}")])
        else:
            rows.append([f"  {text}"])
        compared = latest_compare_line(state.snapshot.compares, run.id)
        if compared:
            rows.append([f"    {compared}"])
        bench = state.snapshot.bench_of(run.id)
        if bench is not None:
            rows.append([f"    {bench.line}"])
        rows.extend([("warn", f"    {notice}")] for notice in state.pod_notices(run))
    if not rows:
        rows.append(["  no run yet: t starts one ([training] in overbrainer.toml)"])
    return rows, selected


def _loss_title(followed: Followed | None) -> Row:
    if followed is None or not (followed.losses or followed.evals):
        return [("title", "Loss")]
    words = [f"Loss of run {followed.run_id}"]
    if followed.losses:
        words.append(f"last {followed.losses[-1][1]:.4f}")
    if followed.evals:
        words.append(f"eval {followed.evals[-1][1]:.4f} ({EVAL_MARK})")
    return [("title", "  ".join(words))]


def _system(state: State) -> tuple[str, Machine]:
    """The panel's title and machine: the shown run's while a task follows it and a sample of
    it came, else this machine's."""
    followed = state.shown_followed()
    if (
        followed is not None
        and followed.machine.sample is not None
        and state.following(followed.run_id) is not None
    ):
        target = next((r.target for r in state.snapshot.runs if r.id == followed.run_id), "")
        where = f" on {target}" if target else ""
        return f"System of run {followed.run_id}{where}", followed.machine
    return "System of this machine", state.machine


def training_rows(state: State, cols: int, height: int) -> list[Row]:
    """The view in at most `height` rows: the runs (scrolled to the selection when they do
    not all fit), the loss chart (at least `MIN_CHART` rows, more as room allows) and the
    system panel (its last gauges left out, and said so, on a screen too short for all)."""
    runs, selected = _run_rows(state, cols)
    followed = state.shown_followed()
    charted = followed is not None and bool(followed.losses or followed.evals)
    loss_rows = 2 + MIN_CHART if charted else 2
    title, machine = _system(state)
    panel = panel_rows(machine, cols)
    runs_room = min(len(runs), RUNS_SHOWN)
    panel_room = max(height - 1 - runs_room - loss_rows - 1, 1)
    if len(panel) > panel_room:
        left_out = len(panel) - panel_room + 1
        note = f"  … {left_out} more gauges (a taller terminal shows them)"
        panel = [*panel[: panel_room - 1], [note]]
    used = 1 + runs_room + loss_rows + 1 + len(panel)
    blanks = 2 if height - used >= 2 else 0
    runs_room += min(len(runs) - runs_room, max(height - used - blanks, 0))
    used += blanks + runs_room - min(len(runs), RUNS_SHOWN)
    start = max(min(selected - runs_room // 2, len(runs) - runs_room), 0)
    more = "" if runs_room == len(runs) else f" ({len(state.visible_runs())}, ↑↓ scrolls)"
    hidden = " (failed hidden)" if state.hide_failed else ""
    lines: list[Row] = [[("title", f"Runs{hidden}{more}")], *runs[start : start + runs_room]]
    if blanks:
        lines.append([""])
    lines.append(_loss_title(followed))
    if charted and followed is not None:
        chart_height = min(MIN_CHART + max(height - used, 0), MAX_CHART)
        chart = loss_chart(followed.losses, followed.evals, cols - 2, chart_height)
        lines.extend([("chart", f"  {row}")] for row in chart)
    elif followed is not None:
        lines.append([f"  no loss yet from run {followed.run_id}"])
    else:
        lines.append([NO_LOSS])
    if blanks:
        lines.append([""])
    lines.append([("title", title)])
    lines.extend(panel)
    return lines[:height]
