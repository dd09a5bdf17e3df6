"""Stage `split`: rewrite `train.jsonl` and `eval.jsonl` from the usable answers, atomically.

With `[quality] decontaminate` set it also rewrites `data/decontaminated.jsonl`, the audit of
the answers the benchmark files left out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

import attrs

from overbrainer.model.errors import WorkFailed
from overbrainer.pipeline.benchmark_files import (
    AUDIT_FILE,
    audit_line,
    load_benchmarks,
    write_audit,
)
from overbrainer.pipeline.blocking import read_in_thread, write_in_thread
from overbrainer.pipeline.engine import StageContext, StageRun
from overbrainer.pipeline.quality_scores import answer_sha, read_scores
from overbrainer.pipeline.split import SplitPlan, plan_split
from overbrainer.storage import (
    Meta,
    Question,
    Stamp,
    collector_paused,
    current,
    example_head,
    file_stamp,
    free_gradually,
    read_current,
    read_records_at,
    rewrite_from,
)

log = logging.getLogger(__name__)


class NoTrainExamples(WorkFailed):
    """The split left `train.jsonl` empty: nothing to train on (exit 1)."""


def _question_text(line: str) -> tuple[str, str]:
    question = Question.from_json(line)
    return question.id, question.text


@attrs.frozen(slots=True)
class _Answer:
    """What the split needs of a stored answer: the fields that place it, and where its line is.

    The checked line is copied back byte for byte from `answers.jsonl` (serialising 100,000
    records again costs more), so neither its text nor its messages stay in memory.
    """

    id: str
    topic: str
    subtopic: str
    meta: Meta
    start: int
    length: int
    low: bool = False
    """The quality judge scored this very line under `[quality] min_score`."""


def _reader(low: Mapping[str, str]) -> Callable[[str, int, int], _Answer]:
    """A line parser that marks the answers `low` holds a low score of (ID → line hash)."""

    def answer(line: str, start: int, length: int) -> _Answer:
        head = example_head(line)
        sha = low.get(head[0])
        scored_low = sha is not None and sha == answer_sha(line)
        return _Answer(*head, start, length, scored_low)

    return answer


def _low_scores(ctx: StageContext) -> dict[str, str]:
    """Each answer ID whose latest score is under `[quality] min_score`, with the hash of the
    line scored: a score of an answer replaced since no longer applies. Blocking."""
    minimum = ctx.settings.quality.min_score
    scores = read_scores(ctx.project.data_file("quality"))
    return {id_: score.answer_sha for id_, score in scores.items() if score.score < minimum}


def _plan(ctx: StageContext) -> tuple[SplitPlan[_Answer], Stamp | None]:
    """Read every answer and question and split them; the answers file's stamp before it.

    Blocking (reads every answer and question, then classifies): a worker thread's job.
    """
    project = ctx.project
    quality = ctx.settings.quality
    # Read first: a bad benchmark file stops the split before anything is written.
    benchmark = load_benchmarks(
        project.root, quality.decontaminate, quality.ngram, quality.ngram_overlap
    )
    source = project.data_file("answers")
    stamp = file_stamp(source)
    # A later record of an ID replaces an earlier one (an unfinished `--force`), and a
    # question a force dropped is gone: its answer is orphaned.
    parse = _reader(_low_scores(ctx))
    answers = current(read_records_at(source, parse), lambda answer: answer.id)
    texts = dict(
        read_current(
            project.data_file("questions"),
            project.force_state("questions"),
            _question_text,
            lambda question: question[0],
        )
    )
    topic = ctx.topic_filter[0] if ctx.topic_filter else None
    pipeline = ctx.settings.pipeline
    plan = plan_split(
        answers,
        texts,
        {topic.name for topic in ctx.settings.topics},
        topic,
        pipeline.eval_ratio,
        pipeline.seed,
        {answer.id for answer in answers if answer.low},
        texts=texts,
        dedup_threshold=pipeline.dedup_threshold,
        benchmark=benchmark,
    )
    return plan, stamp


def _audit(plan: SplitPlan[_Answer]) -> list[str]:
    """The lines of `data/decontaminated.jsonl` for this split."""
    return [audit_line(a.id, a.topic, a.subtopic, found) for a, found in plan.contaminated]


def _write(
    ctx: StageContext,
    chosen: list[list[_Answer]],
    stamp: Stamp | None,
    audit: list[str] | None = None,
) -> None:
    """Rewrite train, eval, then the audit file when `audit` is given; blocking (fsync'd).

    It empties `chosen` as it goes, so that the answers are freed in this thread, and a
    slice at a time: freeing 100,000 of them at once, on the loop or here, holds the GIL
    (and so stalls the loop) for tens of milliseconds.
    """
    source = ctx.project.data_file("answers")
    for name in ("train", "eval"):
        answers = chosen.pop(0)
        spans = [(answer.start, answer.length) for answer in answers]
        free_gradually(answers)
        rewrite_from(ctx.project.data_file(name), source, spans, stamp)
    if audit is not None:
        write_audit(ctx.project.data_file(AUDIT_FILE), audit)


async def split_stage(ctx: StageContext, run: StageRun) -> None:
    """Classify every answer, split the usable ones by the seed, rewrite train and eval."""
    # The collector stays paused until the answers are freed: once re-enabled, its scans of
    # 100,000 live answers held the GIL 0.1-0.4 s each, so scrapes waited that long.
    with collector_paused():
        plan, stamp = await read_in_thread(lambda: _plan(ctx))
        run.start(plan.counted)
        for warning in (plan.orphan_warning(), plan.emptied_eval_warning()):
            if warning is not None:
                log.warning("%s", warning)
        report = plan.report
        chosen = [plan.train, plan.eval]
        audit = _audit(plan) if ctx.settings.quality.decontaminate else None
        trains = bool(plan.train)
        del plan
        await write_in_thread(lambda: _write(ctx, chosen, stamp, audit))
    run.finish_split(report.counts(), report.excluded_total, report.line())
    if not trains:
        # Training on an empty file fails later and less clearly; `run` stops here.
        run.failure = NoTrainExamples(report.no_train_reason())
