"""The messages the app takes: keys, what its tasks report, ticks, signals, config changes."""

from __future__ import annotations

import attrs

from overbrainer.events.frontend import Report
from overbrainer.events.types import Event
from overbrainer.model.system_sample import SystemSample
from overbrainer.ui.tui.snapshot import Snapshot


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
class Glimpsed:
    """A LOAD task read the project's configuration, counts and history; its dataset tree and
    runs follow in its `Loaded`."""

    task: int
    snapshot: Snapshot


@attrs.frozen
class Counted:
    """A COUNT task counted the records of each data file, by its name."""

    task: int
    counts: tuple[tuple[str, int], ...]


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
class AutoPrepared:
    """An ESTIMATE_RUN task estimated `overbrainer run`: the estimate's lines, or the one-line
    reason it could not."""

    task: int
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
    | Glimpsed
    | Counted
    | Previewed
    | AutoPrepared
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
