"""The background tasks the app starts: what each does, which may run together, its spec."""

from __future__ import annotations

import enum

import attrs

from overbrainer.events.types import Stage


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
    COUNT = "count"
    """Count the data files' records (the Pipeline view's records column while a stage runs)."""
    POD_LOG = "pod-log"
    """Read what `overbrainer runs logs RUN --pod` prints (the Logs view's `s`)."""
    PREPARE_COMPARE = "prepare-compare"
    """Plan a compare and price its pod, for its confirmation (§D PrepareCompare)."""
    COMPARE = "compare"
    """`overbrainer compare [--run RUN]` (the newest exported run without one)."""
    REJUDGE = "rejudge"
    """`overbrainer compare --rejudge COMPARE`."""
    ESTIMATE_RUN = "estimate-run"
    """`overbrainer estimate` of the whole run, for the `A` confirmation."""
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
        TaskKind.COUNT,
        TaskKind.PUSH_PLAN,
        TaskKind.PREPARE_COMPARE,
        TaskKind.ESTIMATE_RUN,
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
    train: bool = True
    """AUTO: False runs `run --no-train` (it stops after split)."""

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
            return "overbrainer run" + ("" if self.train else " --no-train")
        if self.kind is TaskKind.ESTIMATE_RUN:
            return "overbrainer estimate"
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
