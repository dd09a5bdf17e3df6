"""Stage `split`: rewrite `train.jsonl` and `eval.jsonl` from the usable answers, atomically."""

from __future__ import annotations

import logging

import attrs

from overbrainer.dataset.jsonl import read_records, rewrite
from overbrainer.dataset.records import Meta, Question, example_head
from overbrainer.pipeline.engine import StageContext, StageRun
from overbrainer.pipeline.split import plan_split

log = logging.getLogger(__name__)


def _question_id(line: str) -> str:
    return Question.from_json(line).id


@attrs.frozen(slots=True)
class _Answer:
    """What the split needs of a stored answer: its fields that place it, and its line."""

    id: str
    topic: str
    subtopic: str
    meta: Meta
    line: str
    """The checked line, written back as is: serialising 100,000 records again costs more."""


def _answer(line: str) -> _Answer:
    # Checked in full, but the messages are not kept: they would hold every answer's text
    # twice (the parsed strings and the line).
    return _Answer(*example_head(line), line)


async def split_stage(ctx: StageContext, run: StageRun) -> None:
    """Classify every answer, split the usable ones by the seed, rewrite train and eval."""
    project = ctx.project
    answers = read_records(project.data_file("answers"), _answer)
    question_ids = set(read_records(project.data_file("questions"), _question_id))
    topic = ctx.topic_filter[0] if ctx.topic_filter else None
    pipeline = ctx.settings.pipeline
    plan = plan_split(
        answers,
        question_ids,
        {topic.name for topic in ctx.settings.topics},
        topic,
        pipeline.eval_ratio,
        pipeline.seed,
    )
    run.start(plan.counted)
    warning = plan.orphan_warning()
    if warning is not None:
        log.warning("%s", warning)
    rewrite(project.data_file("train"), [answer.line for answer in plan.train])
    rewrite(project.data_file("eval"), [answer.line for answer in plan.eval])
    report = plan.report
    run.finish_split(report.counts(), report.excluded_total, report.line())
