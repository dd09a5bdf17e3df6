"""The Compare view's keys: panes, scrolling, filter, compare, rejudge, cancel."""

from __future__ import annotations

import attrs

from overbrainer.ui.tui.actions import Result, abandon_task, job_refused, move, start_job
from overbrainer.ui.tui.compare_view import NO_COMPARE, screen_layout
from overbrainer.ui.tui.snapshot import COMPARE_FILTERS
from overbrainer.ui.tui.state import State
from overbrainer.ui.tui.task_spec import TaskKind, TaskSpec

DETAIL_PAGE = 10
"""Lines PgUp/PgDn scroll the Compare view's detail pane by (never past its last page)."""
REJUDGE_ASK = "y rejudges, n or Esc does not"


def compare_keys(state: State, key: str) -> Result:
    """The Compare view's keys: panes, detail scrolling, `f` filter, `C`, `J`, `c`."""
    if key in ("page down", "page up", "[", "]"):
        layout = screen_layout(state)
        offset = layout.clamp(state.detail_offset)
        if key in ("page down", "page up"):
            step = DETAIL_PAGE if key == "page down" else -DETAIL_PAGE
            offset = layout.clamp(offset + step)
        else:
            offset = layout.next_part(offset) if key == "]" else layout.previous_part(offset)
        return attrs.evolve(state, detail_offset=offset), []
    if key in ("h", "left"):
        return attrs.evolve(state, compare_focus=0), []
    if key in ("l", "right"):
        return attrs.evolve(state, compare_focus=1), []
    if key in ("up", "down", "k", "j", "home", "end"):
        if state.compare_focus == 0:
            moved = move(state.compare_index, key, len(state.snapshot.compares))
            return attrs.evolve(state, compare_index=moved or 0, item_index=0, detail_offset=0), []
        moved = move(state.item_index, key, len(state.compare_items()))
        return attrs.evolve(state, item_index=moved or 0, detail_offset=0), []
    if key == "f":
        index = (state.compare_filter + 1) % len(COMPARE_FILTERS)
        status = f"showing {COMPARE_FILTERS[index][0]}"
        return attrs.evolve(
            state, compare_filter=index, item_index=0, detail_offset=0, status=status
        ), []
    if key == "C":
        return start_job(state, TaskSpec(TaskKind.PREPARE_COMPARE))
    if key == "J":
        row = state.selected_compare()
        if row is None:
            return attrs.evolve(state, status=NO_COMPARE), []
        refused = job_refused(state)
        if refused is not None:
            return refused, []
        # The judge is paid: as for `C`, nothing is asked of it before `y`.
        lines = (
            f"rejudge {row.id} of run {row.run}?",
            f"the judge is asked about each of its {row.questions} questions that this judge "
            "and prompt have no verdict on yet",
            REJUDGE_ASK,
        )
        spec = TaskSpec(TaskKind.REJUDGE, run_id=row.run, compare_id=row.id)
        status = f"rejudge {row.id}? {REJUDGE_ASK}"
        return attrs.evolve(state, confirm=lines, confirm_spec=spec, status=status), []
    if key == "c":
        running = state.comparing()
        if running is None:
            return attrs.evolve(state, status="no compare is running"), []
        return abandon_task(state, running)
    return state, []
