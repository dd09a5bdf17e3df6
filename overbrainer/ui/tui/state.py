"""The TUI's state, the messages it takes and the effects it asks for: plain frozen values."""

from __future__ import annotations

import enum
import logging

import attrs

from overbrainer.events.frontend import Report
from overbrainer.events.types import Event, Stage
from overbrainer.model.system_sample import SystemSample
from overbrainer.ui.progress import per_second
from overbrainer.ui.tui.compare_progress import CompareProgress
from overbrainer.ui.tui.followed import Followed
from overbrainer.ui.tui.machine import Machine


class View(enum.IntEnum):
    """The six views, numbered as their keys `1`-`6`."""

    PROJECT = 1
    DATASET = 2
    PIPELINE = 3
    TRAINING = 4
    LOGS = 5
    COMPARE = 6


class TaskKind(enum.Enum):
    """What a background task does; each runs the same flow as its CLI command."""

    STAGE = "stage"
    """One pipeline stage (`overbrainer subtopics`, …)."""
    AUTO = "auto"
    """The whole `overbrainer run`."""
    TRAIN = "train"
    """`overbrainer train` (a new run)."""
    RESUME = "resume"
    """`overbrainer train --resume-from RUN`."""
    ATTACH = "attach"
    """`overbrainer train attach RUN`."""
    STOP = "stop"
    """`overbrainer train stop RUN`."""
    CANCEL = "cancel"
    """`overbrainer train cancel RUN`."""
    LOAD = "load"
    """Read the project's counts, runs and dataset for the views."""
    PREVIEW = "preview"
    """Read the latest stored answer (the Pipeline view's preview)."""
    POD_LOG = "pod-log"
    """Read what `overbrainer runs logs RUN --pod` prints (the Logs view's `s`)."""
    PREPARE_COMPARE = "prepare-compare"
    """Plan a compare and price its pod, for its confirmation (§D PrepareCompare)."""
    COMPARE = "compare"
    """`overbrainer compare [--run RUN]` (the newest exported run without one)."""
    REJUDGE = "rejudge"
    """`overbrainer compare --rejudge COMPARE`."""
    PUSH_PLAN = "push-plan"
    """Plan a push without network, for its confirmation."""
    PUSH = "push"
    """`overbrainer push RUN`."""
    EXPORT = "export"
    """`overbrainer export RUN`."""
    EDIT = "edit"
    """Edit one dataset record in `$VISUAL`/`$EDITOR` (the Dataset view's `e`)."""
    DELETE = "delete"
    """Delete one dataset record and what hangs from it (the Dataset view's `d`)."""


DATA_KINDS = frozenset(
    {TaskKind.STAGE, TaskKind.AUTO, TaskKind.TRAIN, TaskKind.RESUME, TaskKind.EDIT, TaskKind.DELETE}
)
"""Tasks that write the data or start a run: one at a time (the data lock)."""
READ_KINDS = frozenset(
    {
        TaskKind.LOAD,
        TaskKind.PREVIEW,
        TaskKind.PUSH_PLAN,
        TaskKind.PREPARE_COMPARE,
        TaskKind.POD_LOG,
    }
)
"""Tasks that only read the project: they end on their own, a quit does not wait for them."""
TRAINING_KINDS = frozenset({TaskKind.TRAIN, TaskKind.RESUME, TaskKind.ATTACH, TaskKind.STOP})
"""Tasks that follow a training run: quitting detaches them, a signal abandons them."""
COMPARE_KINDS = frozenset({TaskKind.COMPARE, TaskKind.REJUDGE})
"""Compares: one at a time; cancelling or quitting abandons them."""
JOB_KINDS = frozenset({*COMPARE_KINDS, TaskKind.EXPORT})
"""Jobs that start, compare or export: one of them at a time."""


@attrs.frozen
class TaskSpec:
    """A background task to start: its kind, its stage and its run."""

    kind: TaskKind
    stage: Stage | None = None
    run_id: str | None = None
    compare_id: str | None = None
    followed: bool = False
    """A STOP of a run another task follows: only the request is written, the follower collects."""
    record_file: str = ""
    """EDIT, DELETE: the data file (`questions`…) of the record."""
    record_id: str = ""
    topic: str | None = None
    """STAGE: the one topic it runs on (`--topic NAME`); None for every topic."""
    force: bool = False
    """STAGE: `--force` (what is stored is asked for again and replaced)."""

    @property
    def label(self) -> str:
        """What the task does, in words (as its CLI command line)."""
        if self.kind is TaskKind.COMPARE:
            return "overbrainer compare" + (f" --run {self.run_id}" if self.run_id else "")
        if self.kind is TaskKind.REJUDGE:
            return f"overbrainer compare --rejudge {self.compare_id}"
        if self.kind is TaskKind.PUSH:
            return f"overbrainer push {self.run_id}"
        if self.kind is TaskKind.EXPORT:
            return f"overbrainer export {self.run_id}"
        if self.kind in (TaskKind.EDIT, TaskKind.DELETE):
            return f"{self.kind.value} of data/{self.record_file}.jsonl {self.record_id}"
        if self.kind is TaskKind.STAGE and self.stage is not None:
            topic = f" --topic {self.topic}" if self.topic is not None else ""
            force = " --force" if self.force else ""
            return f"overbrainer {self.stage.value}{topic}{force}"
        if self.kind is TaskKind.AUTO:
            return "overbrainer run"
        if self.kind is TaskKind.TRAIN:
            return "overbrainer train"
        if self.kind is TaskKind.RESUME:
            return f"overbrainer train --resume-from {self.run_id}"
        if self.kind is TaskKind.POD_LOG:
            return f"overbrainer runs logs {self.run_id} --pod"
        if self.kind in READ_KINDS:
            return str(self.kind.value)
        return f"overbrainer train {self.kind.value} {self.run_id}"


@attrs.frozen
class Task:
    """A running background task."""

    id: int
    spec: TaskSpec
    cancelling: bool = False


@attrs.frozen
class RunRow:
    """One training run as the Training view lists it."""

    id: str
    state: str
    target: str
    created: str
    failed: bool = False
    pod: str = ""
    """The pod the ended run left on Runpod (kept, or not deleted); "" when none."""
    job_pods: tuple[tuple[str, str], ...] = ()
    """The pods its ended compares and exports left on Runpod: (compare or export ID, pod)."""
    pod_log: bool = False
    """Whether the run has a `.pod/` folder of kept pod logs."""

    def kept_pods(self) -> tuple[tuple[str, str], ...]:
        """Every pod it left, as (the ID `pod rm` takes, pod ID): its own, then its jobs'."""
        own = ((self.id, self.pod),) if self.pod else ()
        return (*own, *self.job_pods)


@attrs.frozen
class TreeRow:
    """One line of the Dataset tree: depth 0 topic, 1 subtopic, 2 question, 3 answer."""

    depth: int
    text: str
    detail: str = ""
    file: str = ""
    """The data file holding the record (`questions`, `answers`…); empty for a topic."""
    id: str = ""


@attrs.frozen
class CompareItem:
    """One judged question of a compare."""

    id: str
    verdict: str
    question: str
    child: str
    parent: str
    reason: str
    error: str = ""

    @property
    def mark(self) -> str:
        """`✓` win, `=` tie, `✗` loss, `!` child error, `?` unparsed (or inconsistent)."""
        return {"win": "✓", "tie": "=", "loss": "✗", "error": "!"}.get(self.verdict, "?")


@attrs.frozen
class CompareRow:
    """One finished compare (its compare.json) as the Compare view lists it."""

    id: str
    run: str
    quantize: str
    win_or_tie: float | None
    questions: int
    judge: str
    created: str
    summary: tuple[str, ...] = ()
    items: tuple[CompareItem, ...] = ()

    @property
    def percent(self) -> str:
        """The win-or-tie rate as a whole percentage, `-` when nothing was counted."""
        return "-" if self.win_or_tie is None else f"{self.win_or_tie * 100:.0f}%"


COMPARE_FILTERS = (
    ("all", frozenset({"win", "tie", "loss", "error", "unparsed", "inconsistent"})),
    ("losses", frozenset({"loss", "error"})),
    ("ties", frozenset({"tie"})),
    ("wins", frozenset({"win"})),
    ("errors", frozenset({"error", "unparsed"})),
)
"""The Compare view's question filters, in the order `f` cycles through."""


@attrs.frozen
class Snapshot:
    """What the views show of the project on disk, read by a LOAD task."""

    name: str = ""
    config: tuple[str, ...] = ()
    counts: tuple[tuple[str, int], ...] = ()
    history: tuple[str, ...] = ()
    runs: tuple[RunRow, ...] = ()
    tree: tuple[TreeRow, ...] = ()
    training: bool = False
    """Whether overbrainer.toml has a [training] section."""
    compares: tuple[CompareRow, ...] = ()
    """Every run's finished compares, newest first."""
    topics: tuple[str, ...] = ()
    """The topics of overbrainer.toml, in its order (the Pipeline view's run menu)."""

    def count(self, name: str) -> int:
        """The number of records in data/<name>.jsonl (0 when absent)."""
        return dict(self.counts).get(name, 0)


@attrs.frozen
class Live:
    """A stage's progress as its events tell it: for rate and spend."""

    total: int = 0
    done: int = 0
    failed: int = 0
    requests: int = 0
    """Requests answered (items done by a request, failures and retries alike)."""
    cost: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    started: float = 0.0
    now: float = 0.0
    running: bool = False

    @property
    def rate(self) -> float:
        """Items per second since the stage started."""
        return per_second(self.done, self.started, self.now) or 0.0

    @property
    def request_rate(self) -> float | None:
        """Requests per second since the stage started; None before the first."""
        return per_second(self.requests, self.started, self.now)

    @property
    def token_rate(self) -> float:
        """Tokens (in and out) per second since the stage started."""
        return per_second(self.tokens_in + self.tokens_out, self.started, self.now) or 0.0

    def plus(self, other: Live) -> Live:
        """Two stages' counts together, over the sum of their times (a role's totals)."""
        return Live(
            done=self.done + other.done,
            failed=self.failed + other.failed,
            requests=self.requests + other.requests,
            cost=self.cost + other.cost,
            tokens_in=self.tokens_in + other.tokens_in,
            tokens_out=self.tokens_out + other.tokens_out,
            now=(self.now - self.started) + (other.now - other.started),
            running=self.running or other.running,
        )


ROLES = (
    ("generator", (Stage.SUBTOPICS, Stage.QUESTIONS)),
    ("parent", (Stage.ANSWERS,)),
    ("quality", (Stage.QUALITY,)),
)
"""The roles whose requests the Pipeline view counts, with the stages that ask them."""


LEVELS = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR)
"""The Logs view's level filter, in the order `f` cycles through."""


@attrs.frozen
class RunMenu:
    """What `r` offers before a stage runs: the topic (None: all) and `--force`."""

    stage: Stage
    topic: str | None = None
    force: bool = False

    def spec(self) -> TaskSpec:
        """The stage command the menu stands for now."""
        return TaskSpec(TaskKind.STAGE, stage=self.stage, topic=self.topic, force=self.force)


@attrs.frozen
class State:
    """Everything the views show and the handlers decide on."""

    view: View = View.PIPELINE
    snapshot: Snapshot = Snapshot()
    tasks: tuple[Task, ...] = ()
    next_task: int = 1
    live: tuple[tuple[Stage, Live], ...] = ()
    stage_index: int = 0
    run_index: int = 0
    tree_index: int = 0
    hide_failed: bool = False
    dismissed_pods: tuple[str, ...] = ()
    """The runs, compares and exports whose pod notice `p` dismissed (the pods stay)."""
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


# Messages the app handles.


@attrs.frozen
class Key:
    """A key pressed, as urwid names it (`q`, `tab`, `shift tab`, `up`, `ctrl c`…)."""

    key: str


@attrs.frozen
class TaskEvent:
    """An event a task's flow published on its bus, with the time it reached the app."""

    task: int
    event: Event
    now: float


@attrs.frozen
class TaskLagged:
    """A task's forwarder lost `n` events (its bus overflowed)."""

    task: int
    n: int


@attrs.frozen
class TaskReport:
    """A task's flow reported a result (a line, a run created, a run stopped)."""

    task: int
    report: Report


@attrs.frozen
class TaskDone:
    """A task ended: `error` is its one-line message when it failed."""

    task: int
    error: str | None = None
    interrupted: bool = False


@attrs.frozen
class Loaded:
    """A LOAD task read the project."""

    task: int
    snapshot: Snapshot


@attrs.frozen
class Previewed:
    """A PREVIEW task read the latest stored answer ("" when there is none)."""

    task: int
    text: str


@attrs.frozen
class PushPlanned:
    """A PUSH_PLAN task planned `run_id`'s push: the confirmation's lines, or why it cannot."""

    task: int
    run_id: str
    lines: tuple[str, ...] = ()
    error: str | None = None


@attrs.frozen
class ComparePrepared:
    """A PREPARE_COMPARE task planned a compare of `run_id`: the confirmation's lines, or the
    one-line reason it would be refused."""

    task: int
    run_id: str = ""
    lines: tuple[str, ...] = ()
    error: str | None = None


@attrs.frozen
class PodLogLines:
    """A POD_LOG task read lines of `run_id`'s pod log: `first` ones replace what is shown,
    later ones (Runpod's stream) follow them."""

    task: int
    run_id: str
    lines: tuple[str, ...]
    first: bool = False


@attrs.frozen
class Sampled:
    """A sample of this machine (the one the TUI runs on)."""

    sample: SystemSample


@attrs.frozen
class Tick:
    """The 250 ms tick."""

    now: float


@attrs.frozen
class SignalMsg:
    """SIGINT, SIGTERM or SIGHUP reached the process."""

    signum: int


@attrs.frozen
class ConfigChanged:
    """overbrainer.toml or .env changed: `problem` None when the new config is valid."""

    problem: str | None = None


@attrs.frozen
class EditorDone:
    """The editor the app opened has exited."""

    path: str
    error: str | None = None


@attrs.frozen
class Resized:
    """The terminal has `cols` columns and `rows` rows (told before a key when it changed)."""

    cols: int
    rows: int


@attrs.frozen
class Rekeyed:
    """An edit gave the record `old_id` of `data/<file>.jsonl` a new ID: the Dataset selection
    follows it."""

    file: str
    old_id: str
    new_id: str


@attrs.frozen
class Notice:
    """A line for the status bar (a log export written, …)."""

    text: str


Msg = (
    Key
    | Notice
    | TaskEvent
    | TaskLagged
    | TaskReport
    | TaskDone
    | Loaded
    | Previewed
    | PushPlanned
    | ComparePrepared
    | PodLogLines
    | Sampled
    | Tick
    | SignalMsg
    | ConfigChanged
    | EditorDone
    | Resized
    | Rekeyed
)


# Effects the loop applies.


@attrs.frozen
class Spawn:
    """Start `spec` as task `task` in the app's nursery."""

    task: int
    spec: TaskSpec


@attrs.frozen
class Cancel:
    """Set task `task`'s detach event: a stage stops, a followed run is detached."""

    task: int


@attrs.frozen
class Abandon:
    """Set task `task`'s detach event, giving it up (Runpod provisioning is cancelled too)."""

    task: int


@attrs.frozen
class OpenEditor:
    """Run `$VISUAL`/`$EDITOR` on `path`, lending it the terminal."""

    path: str


@attrs.frozen
class ExportLogs:
    """Write the kept log lines at or above `level` to `.overbrainer/logs-<ts>.log`."""

    level: int


@attrs.frozen
class Exit:
    """Leave the app (every task has ended)."""


Effect = Spawn | Cancel | Abandon | OpenEditor | ExportLogs | Exit
