"""Stage `split`: rewrite `train.jsonl` and `eval.jsonl` from the usable answers, atomically."""

from __future__ import annotations

from overbrainer.dataset.jsonl import read_records, rewrite
from overbrainer.dataset.records import Example, Question
from overbrainer.history import SplitCounts
from overbrainer.pipeline.engine import StageContext, StageRun
from overbrainer.pipeline.split import plan_split


def _question_id(line: str) -> str:
    return Question.from_json(line).id


async def split_stage(ctx: StageContext, run: StageRun) -> None:
    """Classify every answer, split the usable ones by the seed, rewrite train and eval."""
    project = ctx.project
    answers = read_records(project.data_file("answers"), Example.from_json)
    question_ids = set(read_records(project.data_file("questions"), _question_id))
    topic_filter = ctx.topic_filter
    counted = (
        len(answers)
        if topic_filter is None
        else sum(1 for example in answers if example.topic in topic_filter)
    )
    run.start(counted)
    pipeline = ctx.settings.pipeline
    plan = plan_split(
        answers,
        question_ids,
        [topic.name for topic in ctx.settings.topics],
        topic_filter,
        pipeline.eval_ratio,
        pipeline.seed,
    )
    rewrite(project.data_file("train"), [example.to_json() for example in plan.train])
    rewrite(project.data_file("eval"), [example.to_json() for example in plan.eval])
    report = plan.report
    run.finish_split(
        SplitCounts(report.train, report.eval, report.orphaned),
        sum(report.excluded.values()),
        report.line(),
    )
