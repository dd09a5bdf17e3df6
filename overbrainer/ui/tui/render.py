"""The views as text: a pure function of the state, the log lines and the screen size."""

from __future__ import annotations

import datetime
import textwrap

from overbrainer.events.types import Stage
from overbrainer.ui.logs import LogBuffer, level_name
from overbrainer.ui.progress import rate_words
from overbrainer.ui.tui.compare_view import CHROME, Row, compare_layout
from overbrainer.ui.tui.live import ROLES
from overbrainer.ui.tui.pipeline_keys import STAGES
from overbrainer.ui.tui.run_menu import menu_lines
from overbrainer.ui.tui.state import State, View
from overbrainer.ui.tui.training_view import training_rows

MIN_COLS = 80
MIN_ROWS = 24
DETAIL_LINES = 4
"""Lines of the Dataset view's detail pane (the selected record's text, wrapped)."""
_STAGE_FILE = {
    Stage.SUBTOPICS: "subtopics",
    Stage.QUESTIONS: "questions",
    Stage.ANSWERS: "answers",
    Stage.QUALITY: "quality",
    Stage.SPLIT: "train",
}
_KEYS = {
    View.PROJECT: "e edit overbrainer.toml",
    View.DATASET: "↑↓ move  e edit the record (in $EDITOR)  d delete it",
    View.PIPELINE: "↑↓ stage  r run (menu)  Enter run now  A auto  c cancel",
    View.TRAINING: (
        "t start a attach c cancel s stop T resume E export h push C compare x hide p pod"
    ),
    View.LOGS: "f level  x export  ↑↓ PgUp/PgDn scroll  End newest  s pod log/back",
    View.COMPARE: "k/j h/l pane [/] part PgUp/PgDn detail f filter C J rejudge c cancel",
}


def header(state: State, cols: int) -> Row:
    """The tab bar: the six views, the current one highlighted, then the project name."""
    row: Row = []
    for view in View:
        label = f" {view.value} {view.name.capitalize()} "
        row.append(("tab_on", label) if view is state.view else ("tab", label))
    row.append(f"  {state.snapshot.name}")
    return row


def footer(state: State, mark: str = "") -> Row:
    """The status line and the current view's keys; `mark` (a spinner frame) leads the status
    while work runs."""
    running = ", ".join(t.spec.label for t in state.work())
    status = state.status or (f"running: {running}" if running else "ready")
    if running and mark:
        status = f"{mark} {status}"
    keys = f"{_KEYS[state.view]}  1-6/Tab views  q quit"
    return [("status", status), "\n", ("keys", keys)]


def body(state: State, logs: LogBuffer, cols: int, rows: int, chrome: int = CHROME) -> list[Row]:
    """The current view's lines: as many as the screen's `rows` leave beside the `chrome`
    (header, divider, status and keys, more when they wrap)."""
    if cols < MIN_COLS or rows < MIN_ROWS:
        return [[("error", f"terminal too small: {cols}x{rows}, {MIN_COLS}x{MIN_ROWS} needed")]]
    height = rows - chrome
    view = state.view
    if view is View.PIPELINE:
        lines = _pipeline(state, cols)
    elif view is View.LOGS:
        lines = _logs(state, logs, height, cols)
    elif view is View.PROJECT:
        lines = _project(state)
    elif view is View.TRAINING:
        lines = training_rows(state, cols, height)
    elif view is View.DATASET:
        lines = _dataset(state, height, cols)
    else:
        lines = _compare(state, height, cols)
    asked = state.confirm
    if state.run_menu is not None:
        asked = menu_lines(state.run_menu, state.snapshot.topics)
    if asked:
        title: Row = [("title", asked[0])]
        shown: list[Row] = [[part] for line in asked[1:] for part in wrapped(f"  {line}", cols, 4)]
        lines = [title, *shown]
    return [_clip(line, cols) for line in lines[:height]]


def _clip(row: Row, cols: int) -> Row:
    out: Row = []
    left = cols
    for part in row:
        text = part if isinstance(part, str) else part[1]
        cut = text[:left]
        left -= len(cut)
        out.append(cut if isinstance(part, str) else (part[0], cut))
    return out


def _pipeline(state: State, cols: int) -> list[Row]:
    lines: list[Row] = [
        [
            (
                "title",
                f"{'stage':<11}{'records':>8}{'done':>6}{'skipped':>8}{'failed':>7}{'rate/s':>7}"
                f"{'tok in':>9}{'tok out':>9}{'tok/s':>6}{'spend':>9}",
            )
        ]
    ]
    for index, stage in enumerate(STAGES):
        live = state.live_of(stage)
        records = state.snapshot.count(_STAGE_FILE[stage])
        mark = "▶" if index == state.stage_index else " "
        run = "…" if live.running else " "
        spend = f"${live.cost:.4f}"
        text = (
            f"{mark}{run}{stage.value:<9}{records:>8}{live.done:>6}{live.skipped:>8}"
            f"{live.failed:>7}{live.rate:>7.1f}{live.tokens_in:>9}{live.tokens_out:>9}"
            f"{live.token_rate:>6.0f}{spend:>9}"
        )
        lines.append([("selected", text)] if index == state.stage_index else [text])
    train, evals = state.snapshot.count("train"), state.snapshot.count("eval")
    lines.append([f"  split: {train} train, {evals} eval"])
    lines.append([("title", f"{'role':<11}{'requests':>9}{'req/s':>10}{'tok/s':>9}{'spend':>11}")])
    for role, stages in ROLES:
        live = state.role_live(stages)
        rate = live.request_rate
        speed = "–" if rate is None else rate_words(rate)
        text = (
            f"{'…' if live.running else ' '} {role:<9}{live.requests:>9}{speed:>10}"
            f"{live.token_rate:>7.0f}/s{f'${live.cost:.4f}':>11}"
        )
        lines.append([text])
    if state.preview:
        lines.append([""])
        lines.append([("title", "latest answer")])
        lines.extend([[part] for part in textwrap.wrap(state.preview, cols)[:DETAIL_LINES]])
    lines.append([""])
    lines.append([("title", "results")])
    lines.extend([[line] for line in state.lines[-8:]] or [["  nothing run yet in this session"]])
    return lines


LOG_INDENT = 15
"""Columns a log line's time and level take: its wrapped rows start under its message."""


def wrapped(text: str, cols: int, indent: int = 0) -> list[str]:
    """`text` in rows of at most `cols` columns, its own lines kept, the rows after its first
    indented by `indent` (a long word is cut, never lost)."""
    rows: list[str] = []
    for part in text.splitlines() or [""]:
        rows.extend(
            textwrap.wrap(
                part,
                cols,
                subsequent_indent=" " * indent,
                replace_whitespace=False,
                drop_whitespace=True,
            )
            or [""]
        )
    return rows


def _last_rows(lines: list[tuple[str, list[str]]], count: int) -> list[Row]:
    """The last `count` rows of the wrapped `lines` (each with its style), newest last."""
    rows: list[Row] = []
    for style, parts in lines:
        rows.extend([(style, part)] if style else [part] for part in parts)
    return rows[-count:]


def _pod_log(state: State, lines: tuple[str, ...], height: int, cols: int) -> list[Row]:
    count = max(height - 1, 1)
    end = len(lines) - min(state.log_offset, max(len(lines) - 1, 0))
    shown = [("", wrapped(line, cols, 2)) for line in lines[max(end - count, 0) : end]]
    title = f"Pod log of run {state.pod_log_run}: {len(lines)} lines (s or Esc: the app's log)"
    return [[("title", title)], *_last_rows(shown, count)]


def _logs(state: State, logs: LogBuffer, height: int, cols: int) -> list[Row]:
    if state.pod_log is not None:
        return _pod_log(state, state.pod_log, height, cols)
    count = max(height - 1, 1)
    window = logs.window(state.log_level, count, state.log_offset)
    title = f"Logs: {level_name(state.log_level)} and above, {window.matching} lines"
    shown: list[tuple[str, list[str]]] = []
    for line in window.lines:
        when = datetime.datetime.fromtimestamp(line.time).strftime("%H:%M:%S")
        name = level_name(line.level)
        style = {"ERROR": "error", "WARN": "warn"}.get(name, "")
        shown.append((style, wrapped(f"{when} {name:<5} {line.message}", cols, LOG_INDENT)))
    return [[("title", title)], *_last_rows(shown, count)]


def _project(state: State) -> list[Row]:
    snap = state.snapshot
    lines: list[Row] = [[("title", "Configuration")]]
    lines.extend([[f"  {line}"] for line in snap.config])
    lines.append([""])
    lines.append([("title", "Data")])
    # Scores exist only with a `[quality] judge`: a zero there says nothing.
    counts = [(n, c) for n, c in snap.counts if c or n != "quality"]
    lines.append(["  " + ", ".join(f"{name} {count}" for name, count in counts)])
    lines.append([""])
    lines.append([("title", "History")])
    lines.extend([[f"  {line}"] for line in snap.history])
    return lines


def _dataset(state: State, height: int, cols: int) -> list[Row]:
    tree = state.snapshot.tree
    if not tree:
        return [["no data yet: run the pipeline (view 3)"]]
    index = min(state.tree_index, len(tree) - 1)
    room = max(height - 2 - DETAIL_LINES, 1)
    start = max(min(index - room // 2, len(tree) - room), 0)
    lines: list[Row] = []
    for at in range(start, min(start + room, len(tree))):
        row = tree[at]
        text = f"{'  ' * row.depth}{'▶' if at == index else ' '} {row.text}"
        if row.detail:
            text = f"{text}  ({row.detail})"
        lines.append([("selected", text)] if at == index else [text])
    selected = tree[index]
    lines.append([""])
    lines.append([("title", f"{selected.file or 'topic'} {selected.id}".strip())])
    lines.extend([[part] for part in textwrap.wrap(selected.text, cols)[:DETAIL_LINES]])
    return lines


def _compare(state: State, height: int, cols: int) -> list[Row]:
    layout = compare_layout(state, height, cols)
    if not layout.detail:
        return list(layout.lines)
    offset = layout.clamp(state.detail_offset)
    detail, room = layout.detail, layout.room
    rule = "─" * min(cols, 40)
    if len(detail) > room:
        last = min(offset + room, len(detail))
        rule = f"{rule[:4]} lines {offset + 1}-{last} of {len(detail)} (PgUp/PgDn) {rule[:4]}"
    return [*layout.lines, [("title", rule)], *detail[offset : offset + room]]
