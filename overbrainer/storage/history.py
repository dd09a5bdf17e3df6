"""The stage history `.overbrainer/history.jsonl`: one line per stage execution, never rewritten."""

from __future__ import annotations

import datetime
import enum
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from overbrainer.events.types import Stage, StageStats
from overbrainer.model import codec
from overbrainer.model.redact import redact
from overbrainer.storage.errors import DataError
from overbrainer.storage.jsonl import open_appender

log = logging.getLogger(__name__)

EMPTY_HISTORY = "no stage has run yet"


def utc_now() -> str:
    """The current time as the history writes it: RFC 3339 UTC to the second, `Z` suffix."""
    now = datetime.datetime.now(datetime.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


class HistoryStatus(enum.Enum):
    """How a stage execution ended."""

    OK = "ok"
    FAILED = "failed"
    INTERRUPTED = "interrupted"

    def __str__(self) -> str:
        return self.value


@codec.record("split", omit=("moved",))
@attrs.frozen
class SplitCounts:
    """What one `split` wrote: counted train and eval examples and the orphaned ones."""

    train: int
    eval: int
    orphaned: int
    moved: int = 0
    """Ours: answers moved to keep near-duplicate questions on one side (written when > 0)."""


# The reference's reader ignores unknown keys, and so does ours; fields of ours are written
# only when set.
@codec.record(
    "history record",
    strict=False,
    omit=("split", "backfilled", "cost_estimated", "reason"),
    require=("done", "skipped", "failed", "excluded", "input_tokens", "output_tokens", "cost"),
)
@attrs.frozen
class HistoryRecord(codec.JsonRecord):
    """One stage execution, fields in the reference's order."""

    stage: Stage
    started_at: str
    ended_at: str
    status: HistoryStatus
    provider: str | None
    model: str | None
    done: int = 0
    skipped: int = 0
    failed: int = 0
    excluded: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    split: SplitCounts | None = None
    backfilled: bool = False
    cost_estimated: bool = False
    """Ours: some reply had no usage, so tokens and cost are partly estimated."""
    reason: str | None = None
    """Ours: why the stage stopped early (`spend cap reached: $X of $Y`)."""

    @classmethod
    def from_stats(
        cls,
        stage: Stage,
        started_at: str,
        ended_at: str,
        status: HistoryStatus,
        provider: str | None,
        model: str | None,
        stats: StageStats,
    ) -> HistoryRecord:
        """A record carrying a stage's counters."""
        return cls(
            stage=stage,
            started_at=started_at,
            ended_at=ended_at,
            status=status,
            provider=provider,
            model=model,
            done=stats.done,
            skipped=stats.skipped,
            failed=stats.failed,
            excluded=stats.excluded,
            input_tokens=stats.usage.input_tokens,
            output_tokens=stats.usage.output_tokens,
            cost=stats.cost,
        )


def append_history(path: Path, record: HistoryRecord) -> bool:
    """Append `record` in one write; a failure is logged as a warning, never raised.

    Returns whether the line was written. A last line left without its newline by a crash
    gets one first, so only that broken line is lost.
    """
    try:
        append_records(path, (record,))
    except DataError as error:
        log.warning("cannot record the %s stage in %s: %s", record.stage, path, error.cause)
        return False
    return True


def append_records(path: Path, records: Sequence[HistoryRecord]) -> None:
    """Append every record in a single write call; DataError when it cannot.

    A last line left without its newline by a crash gets one first: the history is never cut.
    Known secrets are masked (a model name is free text).
    """
    with open_appender(path, keep_torn=True) as out:
        out.append_all(redact(record.to_json()) for record in records)


def read_history(path: Path) -> list[HistoryRecord]:
    """Every record of the history, oldest first; a missing file is empty.

    A line that does not parse is skipped with the warning «skipping line N of PATH: …».
    Raises OSError when the file exists but cannot be read.
    """
    try:
        content = path.read_bytes()
    except FileNotFoundError:
        return []
    records = []
    for number, raw in enumerate(content.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            records.append(HistoryRecord.from_json(raw.decode("utf-8")))
        except ValueError as error:  # UnicodeDecodeError and JSONDecodeError included
            log.warning("skipping line %d of %s: %s", number, path, error)
    return records


@attrs.frozen
class CostTotal:
    """A sum of costs where some may be unknown: `known` is None when none is known."""

    known: float | None = None
    partial: bool = False

    @classmethod
    def first(cls, cost: float | None) -> CostTotal:
        """The total of a single entry."""
        return cls(cost, False)

    def add(self, cost: float | None) -> CostTotal:
        """This total plus one more entry's cost, marking it partial when certainty is lost."""
        if self.known is None and not self.partial:
            return CostTotal() if cost is None else CostTotal(cost, True)
        assert self.known is not None
        if self.partial:
            return CostTotal(self.known + (cost or 0.0), True)
        if cost is None:
            return CostTotal(self.known, True)
        return CostTotal(self.known + cost, False)

    def merge(self, other: CostTotal) -> CostTotal:
        """Two stage totals together, as the overall total merges them."""
        if self.known is None or other.known is None:
            known = self.known if other.known is None else other.known
            return CostTotal(known, known is not None)
        return CostTotal(self.known + other.known, self.partial or other.partial)

    def __str__(self) -> str:
        if self.known is None:
            return "cost unknown"
        return f"${self.known:.4f}" + ("+" if self.partial else "")


@attrs.frozen
class HistoryTotal:
    """The sum of some executions."""

    runs: int = 0
    done: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: CostTotal = CostTotal()

    def add(self, record: HistoryRecord) -> HistoryTotal:
        """This total plus one execution."""
        cost = CostTotal.first(record.cost) if self.runs == 0 else self.cost.add(record.cost)
        return HistoryTotal(
            self.runs + 1,
            self.done + record.done,
            self.failed + record.failed,
            self.input_tokens + record.input_tokens,
            self.output_tokens + record.output_tokens,
            cost,
        )

    def merge(self, other: HistoryTotal) -> HistoryTotal:
        """Two totals together; the cost merges as the overall total does."""
        cost = other.cost if self.runs == 0 else self.cost.merge(other.cost)
        return HistoryTotal(
            self.runs + other.runs,
            self.done + other.done,
            self.failed + other.failed,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            cost,
        )


def history_totals(
    records: Iterable[HistoryRecord],
) -> tuple[dict[Stage, HistoryTotal], HistoryTotal]:
    """Totals per stage present (in stage order) and over everything."""
    per_stage: dict[Stage, HistoryTotal] = {}
    for record in records:
        per_stage[record.stage] = per_stage.get(record.stage, HistoryTotal()).add(record)
    ordered = {stage: per_stage[stage] for stage in Stage if stage in per_stage}
    overall = HistoryTotal()
    for total in ordered.values():
        overall = overall.merge(total)
    return ordered, overall


def total_line(name: str, total: HistoryTotal) -> str:
    """One line of the default `history` output."""
    return (
        f"{name:<9}  {total.runs} run(s), {total.done} done, {total.failed} failed; "
        f"tokens {total.input_tokens} in, {total.output_tokens} out; {total.cost}"
    )


def record_line(record: HistoryRecord) -> str:
    """One line of `history --all`."""
    head = f"{record.started_at}  {record.stage.value:<9}  {record.status.value:<11}"
    if record.split is not None:
        s = record.split
        return (
            f"{head}  train {s.train}, eval {s.eval}, excluded {record.excluded}, "
            f"orphaned {s.orphaned}" + (f", moved {s.moved}" if s.moved else "")
        )
    line = (
        f"{head}  {record.model or '-'}  {record.done} done, {record.skipped} skipped, "
        f"{record.failed} failed, {record.excluded} excluded; tokens {record.input_tokens} in, "
        f"{record.output_tokens} out; {CostTotal.first(record.cost)}"
    )
    if record.cost_estimated and record.cost is not None:
        line += " (estimated)"
    if record.reason is not None:
        line += f" ({record.reason})"
    return line + (" (backfilled)" if record.backfilled else "")


def format_history(records: Sequence[HistoryRecord], all_entries: bool = False) -> list[str]:
    """The lines `overbrainer history [--all]` prints, `no stage has run yet` when empty."""
    if not records:
        return [EMPTY_HISTORY]
    if all_entries:
        return [record_line(record) for record in records]
    per_stage, overall = history_totals(records)
    lines = [total_line(stage.value, total) for stage, total in per_stage.items()]
    lines.append(total_line("total", overall))
    return lines
