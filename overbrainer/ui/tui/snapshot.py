"""What the views show of the project on disk (runs, dataset tree, compares), read by a LOAD."""

from __future__ import annotations

from collections.abc import Sequence

import attrs


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
    base_win_or_tie: float | None = None
    """The child's win-or-tie rate against its base model (`compare --base`)."""
    has_base: bool = False
    """The compare asked the base model too."""

    @property
    def percent(self) -> str:
        """The win-or-tie rate as a whole percentage, `-` when nothing was counted."""
        return "-" if self.win_or_tie is None else f"{self.win_or_tie * 100:.0f}%"

    @property
    def base_percent(self) -> str:
        """The rate against the base as `percent` writes it; "" without a base."""
        if not self.has_base:
            return ""
        return "-" if self.base_win_or_tie is None else f"{self.base_win_or_tie * 100:.0f}%"


COMPARE_FILTERS = (
    ("all", frozenset({"win", "tie", "loss", "error", "unparsed", "inconsistent"})),
    ("losses", frozenset({"loss", "error"})),
    ("ties", frozenset({"tie"})),
    ("wins", frozenset({"win"})),
    ("errors", frozenset({"error", "unparsed"})),
)
"""The Compare view's question filters, in the order `f` cycles through."""


@attrs.frozen
class BenchRow:
    """A run's newest bench (its bench.json): what the Training and Compare views show."""

    run: str
    id: str
    tasks: int
    verdict: str
    """The regression line in plain words."""
    lines: tuple[str, ...] = ()
    """One line per task and metric: the child's score, the base's, the row's verdict."""

    @property
    def line(self) -> str:
        """The Training view's line under the run."""
        count = f"{self.tasks} task" + ("" if self.tasks == 1 else "s")
        return f"bench: {self.verdict} ({self.id}, {count})"


@attrs.frozen
class Snapshot:
    """What the views show of the project on disk, read by a LOAD task."""

    name: str = ""
    config: tuple[str, ...] = ()
    counts: tuple[tuple[str, int], ...] = ()
    history: tuple[str, ...] = ()
    runs: tuple[RunRow, ...] = ()
    tree: Sequence[TreeRow] = ()
    """The Dataset view's rows: a big project's are read from disk a page at a time."""
    training: bool = False
    """Whether overbrainer.toml has a [training] section."""
    compares: tuple[CompareRow, ...] = ()
    """Every run's finished compares, newest first."""
    benches: tuple[BenchRow, ...] = ()
    """Each run's newest bench, for the runs that have one."""
    topics: tuple[str, ...] = ()
    """The topics of overbrainer.toml, in its order (the Pipeline view's run menu)."""

    def bench_of(self, run_id: str) -> BenchRow | None:
        """`run_id`'s newest bench, if it has one."""
        return next((row for row in self.benches if row.run == run_id), None)

    def count(self, name: str) -> int:
        """The number of records in data/<name>.jsonl (0 when absent)."""
        return dict(self.counts).get(name, 0)
