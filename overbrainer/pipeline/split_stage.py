"""Stage `split`: rewrite `train.jsonl` and `eval.jsonl` from the usable answers, atomically.

With `[quality] decontaminate` set it also rewrites `data/decontaminated.jsonl`, the audit of
the answers the benchmark files left out.
"""

from __future__ import annotations

import logging
from array import array
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import attrs

from overbrainer.model.errors import WorkFailed
from overbrainer.pipeline.benchmark_files import (
    AUDIT_FILE,
    audit_line,
    load_benchmarks,
    write_audit,
)
from overbrainer.pipeline.blocking import read_in_thread, stop_if_cancelled, write_in_thread
from overbrainer.pipeline.decontaminate import BenchmarkIndex, Contamination
from overbrainer.pipeline.engine import StageContext, StageRun
from overbrainer.pipeline.near_duplicates import Signatures
from overbrainer.pipeline.quality_scores import QualityScore, answer_sha
from overbrainer.pipeline.split import Rows, SplitPlan, plan_rows
from overbrainer.storage import (
    Question,
    Stamp,
    collector_paused,
    example_head,
    file_stamp,
    free_gradually,
    load_force_state,
    read_records_at,
    rewrite_from,
)

log = logging.getLogger(__name__)


class NoTrainExamples(WorkFailed):
    """The split left `train.jsonl` empty: nothing to train on (exit 1)."""


@attrs.define
class _Answers:
    """The answers as the split keeps them: compact rows, and where each row's line is.

    The chosen lines are copied back byte for byte from `answers.jsonl` (serialising a
    million records again costs more), so no record stays in memory.
    """

    rows: Rows = attrs.field(factory=Rows)
    starts: array[int] = attrs.field(factory=lambda: array("q"))
    lengths: array[int] = attrs.field(factory=lambda: array("q"))
    row_of: dict[str, int] = attrs.field(factory=dict)
    """The live row of each ID: a later line of an ID replaces an earlier one (an unfinished
    `--force`), as `current` says."""
    names: dict[str, str] = attrs.field(factory=dict)
    """One string object per topic and subtopic name, shared by the rows."""

    def read(self, source: Path, low: Mapping[str, str]) -> None:
        """Add a row for each line of `source`; `low` holds the hash of each answer line
        scored under `[quality] min_score`, by ID. Blocking."""
        names, rows, row_of = self.names, self.rows, self.row_of

        def answer(line: str, start: int, length: int) -> None:
            id_, topic, subtopic, meta = example_head(line)
            sha = low.get(id_)
            scored_low = sha is not None and sha == answer_sha(line)
            replaced = row_of.get(id_)
            if replaced is not None:
                rows.live[replaced] = 0
            topic = names.setdefault(topic, topic)
            subtopic = names.setdefault(subtopic, subtopic)
            row_of[id_] = rows.append(id_, topic, subtopic, meta.excluded, scored_low)
            self.starts.append(start)
            self.lengths.append(length)

        _each_line(source, answer)

    def spans(self, chosen: list[int]) -> Iterator[tuple[int, int]]:
        """Where the lines of the `chosen` rows are in `answers.jsonl`, in their order."""
        starts, lengths = self.starts, self.lengths
        return ((starts[row], lengths[row]) for row in chosen)


PHASES_FROM = 10_000
"""Answer lines from which `split` logs each phase (below, it all takes about a second)."""

CHECK_EVERY = 10_000
"""Lines read between two looks at whether the stage was cancelled."""


def _each_line(path: Path, visit: Callable[[str, int, int], None]) -> None:
    """Call `visit` on each record line of `path` (with its byte offset and length), keeping
    nothing: what `read_records_at` checks of a file, without its list of records. It stops
    (`trio.Cancelled`) within `CHECK_EVERY` lines of the stage being cancelled."""
    left = CHECK_EVERY

    def visit_checked(line: str, start: int, length: int) -> None:
        nonlocal left
        left -= 1
        if not left:
            left = CHECK_EVERY
            stop_if_cancelled()
        visit(line, start, length)

    read_records_at(path, visit_checked).clear()


def _low_scores(ctx: StageContext) -> dict[str, str]:
    """Each answer ID whose latest score is under `[quality] min_score`, with the hash of the
    line scored: a score of an answer replaced since no longer applies. Blocking."""
    minimum = ctx.settings.quality.min_score
    low: dict[str, str] = {}

    def score(line: str, _start: int, _length: int) -> None:
        found = QualityScore.from_json(line)
        if found.score < minimum:
            low[found.id] = found.answer_sha
        else:
            low.pop(found.id, None)

    _each_line(ctx.project.data_file("quality"), score)
    return low


def _questions(
    ctx: StageContext, answers: _Answers, benchmark: BenchmarkIndex
) -> tuple[Signatures, dict[int, Contamination]]:
    """Mark each answer whose question is current, and keep that question's bigrams (and
    what `benchmark` matches of it) when the answer may join the split: the texts themselves
    are not kept. Blocking."""
    project = ctx.project
    state = load_force_state(project.force_state("questions"))
    dropped = set() if state is None else state.dropped
    configured = {topic.name for topic in ctx.settings.topics}
    signatures = Signatures()
    contamination: dict[int, Contamination] = {}
    row_of, rows = answers.row_of, answers.rows
    question, excluded, low, topics = rows.question, rows.excluded, rows.low, rows.topics
    check = len(benchmark) > 0

    def read(line: str, _start: int, _length: int) -> None:
        found = Question.from_json(line)
        row = row_of.get(found.id)
        # A later line of an ID replaces an earlier one; a question a force dropped is gone.
        if row is None or found.id in dropped:
            return
        if excluded[row] is not None or low[row] or topics[row] not in configured:
            question[row] = 0  # known, and never clustered
            return
        question[row] = signatures.add(found.text)
        if check:
            matched = benchmark.match(found.text)
            if matched is None:
                contamination.pop(row, None)
            else:
                contamination[row] = matched

    _each_line(project.data_file("questions"), read)
    return signatures, contamination


def _plan(ctx: StageContext) -> tuple[SplitPlan[int], _Answers, Stamp | None]:
    """Read the answers and questions in streaming passes and split them; the answers file's
    stamp before it. Blocking (a worker thread's job)."""
    project = ctx.project
    quality = ctx.settings.quality
    # Read first: a bad benchmark file stops the split before anything is written.
    benchmark = load_benchmarks(
        project.root, quality.decontaminate, quality.ngram, quality.ngram_overlap
    )
    source = project.data_file("answers")
    stamp = file_stamp(source)
    answers = _Answers()
    answers.read(source, _low_scores(ctx))
    phases = log.info if len(answers.rows.ids) >= PHASES_FROM else log.debug
    phases("split: %d answer line(s) read", len(answers.rows.ids))
    signatures, contamination = _questions(ctx, answers, benchmark)
    answers.row_of.clear()
    phases("split: grouping %d question(s) into near-duplicate clusters", len(signatures))
    topic = ctx.topic_filter[0] if ctx.topic_filter else None
    pipeline = ctx.settings.pipeline
    plan = plan_rows(
        answers.rows,
        {topic.name for topic in ctx.settings.topics},
        topic,
        pipeline.eval_ratio,
        pipeline.seed,
        signatures=signatures,
        dedup_threshold=pipeline.dedup_threshold,
        contamination=contamination,
        check=stop_if_cancelled,
    )
    return plan, answers, stamp


def _audit(plan: SplitPlan[int], rows: Rows) -> list[str]:
    """The lines of `data/decontaminated.jsonl` for this split."""
    return [
        audit_line(rows.ids[row], rows.topics[row], rows.subtopics[row], found)
        for row, found in plan.contaminated
    ]


def _never_cancelled() -> None:
    """The check of a write that always runs to its end."""


def _write(
    ctx: StageContext,
    plan: SplitPlan[int],
    answers: _Answers,
    stamp: Stamp | None,
    audit: list[str] | None = None,
) -> None:
    """Rewrite train, eval, then the audit file when `audit` is given; blocking (fsync'd).

    It frees the chosen rows and the IDs as it goes, a slice at a time and in this thread:
    freeing a million of them at once, here or on the loop, holds the GIL (and so stalls the
    loop) for tens of milliseconds.
    """
    source = ctx.project.data_file("answers")
    # A cancel stops the train file's copy (it is left as it was); once train is replaced,
    # eval is written to its end, so the two files never come from two different splits.
    for name, chosen, check in (
        ("train", plan.train, stop_if_cancelled),
        ("eval", plan.eval, _never_cancelled),
    ):
        rewrite_from(ctx.project.data_file(name), source, answers.spans(chosen), stamp, check)
        free_gradually(chosen)
    free_gradually(answers.rows.ids)
    if audit is not None:
        write_audit(ctx.project.data_file(AUDIT_FILE), audit)


async def split_stage(ctx: StageContext, run: StageRun) -> None:
    """Classify every answer, split the usable ones by the seed, rewrite train and eval."""
    # The rows hold no record, but a million of their IDs are still objects the collector
    # would scan: it stays paused while they live.
    with collector_paused():
        plan, answers, stamp = await read_in_thread(lambda: _plan(ctx))
        run.start(plan.counted)
        for warning in (plan.orphan_warning(), plan.emptied_eval_warning()):
            if warning is not None:
                log.warning("%s", warning)
        report = plan.report
        audit = _audit(plan, answers.rows) if ctx.settings.quality.decontaminate else None
        trains = bool(plan.train)
        phases = log.info if len(plan.train) + len(plan.eval) >= PHASES_FROM else log.debug
        phases("split: writing %d train and %d eval line(s)", len(plan.train), len(plan.eval))
        await write_in_thread(lambda: _write(ctx, plan, answers, stamp, audit))
    run.finish_split(report.counts(), report.excluded_total, report.line())
    if not trains:
        # Training on an empty file fails later and less clearly; `run` stops here.
        run.failure = NoTrainExamples(report.no_train_reason())
