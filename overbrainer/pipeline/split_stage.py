"""Stage `split`: rewrite `train.jsonl` and `eval.jsonl` from the usable answers, atomically."""

from __future__ import annotations

import logging

from overbrainer.dataset.jsonl import read_records, rewrite
from overbrainer.dataset.records import Example, Question
from overbrainer.pipeline.engine import StageContext, StageRun
from overbrainer.pipeline.split import plan_split

log = logging.getLogger(__name__)


def _question_id(line: str) -> str:
    return Question.from_json(line).id


def _with_line(line: str) -> tuple[Example, str]:
    # The checked line is written back as is: serialising 100,000 records again costs more.
    return Example.from_json(line), line


async def split_stage(ctx: StageContext, run: StageRun) -> None:
    """Classify every answer, split the usable ones by the seed, rewrite train and eval."""
    project = ctx.project
    stored = read_records(project.data_file("answers"), _with_line)
    lines = {id(example): line for example, line in stored}
    answers = [example for example, _ in stored]
    del stored
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
    rewrite(project.data_file("train"), [lines[id(example)] for example in plan.train])
    rewrite(project.data_file("eval"), [lines[id(example)] for example in plan.eval])
    report = plan.report
    run.finish_split(report.counts(), report.excluded_total, report.line())
