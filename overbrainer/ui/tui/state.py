"""The TUI's state: the view shown, what was read of the project, the tasks and what they said."""

from __future__ import annotations

import enum
import logging

import attrs

from overbrainer.events.types import Stage
from overbrainer.ui.tui.compare_progress import CompareProgress
from overbrainer.ui.tui.followed import Followed
from overbrainer.ui.tui.live import Live
from overbrainer.ui.tui.machine import Machine
from overbrainer.ui.tui.run_menu import RunMenu
from overbrainer.ui.tui.snapshot import COMPARE_FILTERS, CompareItem, CompareRow, RunRow, Snapshot
from overbrainer.ui.tui.task_spec import (
    COMPARE_KINDS,
    DATA_KINDS,
    READ_KINDS,
    TRAINING_KINDS,
    Task,
    TaskKind,
    TaskSpec,
)


class View(enum.IntEnum):
    """The six views, numbered as their keys `1`-`6`."""

    PROJECT = 1
    DATASET = 2
    PIPELINE = 3
    TRAINING = 4
    LOGS = 5
    COMPARE = 6


@attrs.frozen
class State:
    """Everything the views show and the handlers decide on."""

    view: View = View.PIPELINE
    snapshot: Snapshot = attrs.Factory(Snapshot)
    tasks: tuple[Task, ...] = ()
    next_task: int = 1
    live: tuple[tuple[Stage, Live], ...] = ()
    stage_index: int = 0
    run_index: int = 0
    tree_index: int = 0
    hide_failed: bool = False
    dismissed_pods: tuple[str, ...] = ()
    """The runs, compares and exports whose pod notice `p` dismissed (the pods stay)."""
    select_run: str | None = None
    """A run this session created: the Training view's cursor moves to it once it is listed."""
    run_picked: bool = False
    """A run was selected in the Training view (a move there): the Logs view's `s` shows its
    pod log; before, the newest run's with one."""
    pod_log: tuple[str, ...] | None = None
    """The pod log the Logs view shows instead of the app's own (None: the app's)."""
    pod_log_run: str = ""
    log_level: int = logging.INFO
    log_offset: int = 0
    status: str = ""
    machine: Machine = attrs.Factory(Machine)
    """This machine's samples (the system panel while no followed run's machine is shown)."""
    followed: tuple[Followed, ...] = ()
    """The runs followed in this session, oldest first: losses, steps, their machine."""
    preview: str = ""
    """The latest stored answer: its question and the start of its reply."""
    preview_at: float = 0.0
    counted_at: float = 0.0
    """When the data files' records were last counted while a stage ran."""
    lines: tuple[str, ...] = ()
    """The result lines the tasks reported (what the CLI prints on stdout), newest last."""
    asking_quit: bool = False
    quitting: bool = False
    task_runs: tuple[tuple[int, str], ...] = ()
    """The run each training task follows (from its spec, or the run it created)."""
    notes: tuple[str, ...] = ()
    """Lines printed once the screen is gone (how to follow again the runs left training)."""
    signalled: bool = False
    """The quit came from a signal or Ctrl-C: the command exits 130."""
    now: float = 0.0
    compare_index: int = 0
    item_index: int = 0
    compare_filter: int = 0
    """Index into COMPARE_FILTERS."""
    compare_focus: int = 1
    """Which Compare pane `k/j` move in: 0 the compares, 1 the questions (`h`/`l`)."""
    detail_offset: int = 0
    """Lines of the Compare view's detail pane scrolled past (PgUp/PgDn, `[`/`]`); 0 on a new
    question, never past its last page."""
    cols: int = 80
    rows: int = 24
    """The terminal's size when the last key came (the Compare detail's layout)."""
    confirm: tuple[str, ...] = ()
    """A confirmation shown (its lines); `y` starts `confirm_spec`, another key dismisses it."""
    confirm_spec: TaskSpec | None = None
    confirm_detach: int | None = None
    """The task `d` detaches from while the confirmation shows (a cancel asked while following)."""
    run_menu: RunMenu | None = None
    """The Pipeline view's `r` menu, while it is up."""
    compare_progress: CompareProgress | None = None
    """What the running compare is doing (None: no compare runs)."""

    def live_of(self, stage: Stage) -> Live:
        """The live progress of `stage`."""
        return dict(self.live).get(stage, Live())

    def role_live(self, stages: tuple[Stage, ...]) -> Live:
        """The requests, tokens and spend of a role's stages in this session, together."""
        total = Live()
        for stage in stages:
            total = total.plus(self.live_of(stage))
        return total

    def busy(self) -> Task | None:
        """The task holding the data lock, if any."""
        return next((t for t in self.tasks if t.spec.kind in DATA_KINDS), None)

    def work(self) -> tuple[Task, ...]:
        """The tasks a quit must stop (reading the project does not count)."""
        return tuple(t for t in self.tasks if t.spec.kind not in READ_KINDS)

    def comparing(self) -> Task | None:
        """The running compare, if any (one at a time)."""
        return next((t for t in self.tasks if t.spec.kind in COMPARE_KINDS), None)

    def preparing(self) -> Task | None:
        """The compare being planned for its confirmation, if any."""
        return next((t for t in self.tasks if t.spec.kind is TaskKind.PREPARE_COMPARE), None)

    def exporting(self) -> Task | None:
        """The running export, if any (one at a time)."""
        return next((t for t in self.tasks if t.spec.kind is TaskKind.EXPORT), None)

    def following(self, run_id: str) -> Task | None:
        """The task following `run_id` (a start, resume, attach or stop), if any."""
        ids = {task for task, run in self.task_runs if run == run_id}
        return next((t for t in self.tasks if t.id in ids and t.spec.kind in TRAINING_KINDS), None)

    def selected_compare(self) -> CompareRow | None:
        """The compare the Compare view shows."""
        rows = self.snapshot.compares
        return rows[min(self.compare_index, len(rows) - 1)] if rows else None

    def compare_items(self) -> tuple[CompareItem, ...]:
        """The selected compare's questions that pass the filter."""
        row = self.selected_compare()
        shown = COMPARE_FILTERS[self.compare_filter][1]
        return tuple(i for i in row.items if i.verdict in shown) if row else ()

    def pod_notices(self, run: RunRow) -> tuple[str, ...]:
        """The Training view's lines about the pods `run` and its compares and exports left,
        but those dismissed."""
        return tuple(
            f"pod {pod} kept: overbrainer pod rm {holder}"
            for holder, pod in run.kept_pods()
            if holder not in self.dismissed_pods
        )

    def reading_pod_log(self) -> Task | None:
        """The task reading a pod log for the Logs view, if any."""
        return next((t for t in self.tasks if t.spec.kind is TaskKind.POD_LOG), None)

    def followed_of(self, run_id: str) -> Followed | None:
        """What was seen of `run_id`'s job while a task followed it in this session."""
        return next((f for f in self.followed if f.run_id == run_id), None)

    def task_run(self, task: int) -> str | None:
        """The run task `task` follows now (a resume: the run it created), if any."""
        return next((run for t, run in reversed(self.task_runs) if t == task), None)

    def shown_followed(self) -> Followed | None:
        """The run the loss chart shows: the selected one if it was followed, else the one a
        task follows now, else the last one followed."""
        runs = self.visible_runs()
        selected = runs[min(self.run_index, len(runs) - 1)] if runs else None
        chosen = self.followed_of(selected.id) if selected is not None else None
        live = [f for f in self.followed if self.following(f.run_id) is not None]
        return (
            chosen or (live[-1] if live else None) or (self.followed[-1] if self.followed else None)
        )

    def visible_runs(self) -> tuple[RunRow, ...]:
        """The runs the Training view lists (`x` hides the failed ones)."""
        runs = self.snapshot.runs
        return tuple(r for r in runs if not r.failed) if self.hide_failed else runs
