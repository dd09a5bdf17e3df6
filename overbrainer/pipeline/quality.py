"""Stage `quality` (ours): the `[quality] judge` scores each usable stored answer from 1 to 10.

Each score is appended to `data/quality.jsonl` at once; `answers.jsonl` is never rewritten.
An answer is scored again only when its stored line changed (re-answered), the judge model
or the prompt changed, or `--force` is given.
"""

from __future__ import annotations

import logging
from collections.abc import Set as AbstractSet
from pathlib import Path

import attrs

from overbrainer.llm import LlmError
from overbrainer.model.errors import OverbrainerError
from overbrainer.pipeline.blocking import appending, read_in_thread
from overbrainer.pipeline.engine import StageContext, StageRun
from overbrainer.pipeline.judge_watch import UnscoredStreak
from overbrainer.pipeline.quality_left import latest_work, scored_left
from overbrainer.pipeline.quality_scores import (
    QualityScore,
    answer_sha,
    parse_score,
    prompt_sha,
    read_scores,
)
from overbrainer.pipeline.rescoring import pending_rescores, rescoring
from overbrainer.project.directory import Project
from overbrainer.project.templates import Template, template_source
from overbrainer.storage import Example, current, read_records_at

log = logging.getLogger(__name__)

TEMPLATE = "quality.txt"
FIX = "use a `[quality] judge` model that follows prompts/quality.txt's JSON, or fix that prompt"
"""The end of the line that stops a judge which never scores."""
ASKS = 2
"""Asks per answer: a reply without a score is asked once more, then the item fails."""


class UnscoredReply(OverbrainerError):
    """The judge's replies to one answer held no score from 1 to 10."""

    def __init__(self, asks: int) -> None:
        super().__init__(f"no score from 1 to 10 in the judge's reply ({asks} asks)")


@attrs.frozen
class Stored:
    """One stored answer to score: its record and the hash of its line."""

    example: Example
    sha: str

    @property
    def text_bytes(self) -> int:
        """The UTF-8 size of the question and answer the judge is shown."""
        return sum(len(text.encode()) for text in question_and_answer(self.example))


def _stored(line: str, _start: int, _length: int) -> Stored:
    return Stored(Example.from_json(line), answer_sha(line))


def usable_answers(project: Project, topics: frozenset[str]) -> list[Stored]:
    """The usable current answers of `topics`, in file order. Blocking."""
    answers = read_records_at(project.data_file("answers"), _stored)
    return [
        stored
        for stored in current(answers, lambda stored: stored.example.id)
        if stored.example.topic in topics and stored.example.usable
    ]


def unscored_among(
    answers: list[Stored], scores: Path, model: str, source: str, redo: AbstractSet[str]
) -> tuple[list[Stored], int]:
    """Those of `answers` that `model` has not scored with the prompt `source`, or that are in
    `redo` (a `--force` scores them again); and how many it has. Blocking: reads `scores`."""
    known_scores = read_scores(scores)
    prompt = prompt_sha(source)
    pending: list[Stored] = []
    skipped = 0
    for stored in answers:
        known = known_scores.get(stored.example.id)
        if (
            stored.example.id not in redo
            and known is not None
            and known.same_work(stored.sha, model, prompt)
        ):
            skipped += 1
        else:
            pending.append(stored)
    return pending, skipped


def unscored(
    project: Project, topics: frozenset[str], model: str, source: str
) -> tuple[list[Stored], int]:
    """The usable current answers of `topics` that `model` has not scored with the prompt
    `source`, or that an unfinished `--force` still has to score again, in file order; and
    how many it has. Blocking."""
    redo = pending_rescores(project, topics)
    return unscored_except(project, topics, model, source, redo)


def unscored_except(
    project: Project, topics: frozenset[str], model: str, source: str, redo: AbstractSet[str]
) -> tuple[list[Stored], int]:
    """`unscored_among` the usable current answers of `topics`, reading of each stored answer
    only its ID, topic, exclusion and hash unless it is to be scored. Blocking."""
    latest = latest_work(project.data_file("quality"), model, prompt_sha(source))
    left, skipped = scored_left(project.data_file("answers"), latest, topics, redo)
    return [Stored(example, sha) for example, sha in left], skipped


def question_and_answer(example: Example) -> tuple[str, str]:
    """The question asked and the answer's text (its reasoning is not shown to the judge)."""
    question = next((m.content for m in example.messages if m.role == "user"), "")
    answer = next((m.content for m in reversed(example.messages) if m.role == "assistant"), "")
    return question, answer


async def quality_stage(ctx: StageContext, run: StageRun) -> None:
    """Score every usable answer of the selected topics not yet scored by this judge and
    prompt (all of them with `--force`), `concurrency` at a time.

    A `--force` is kept in `.overbrainer/force-quality.json` once the first request goes out
    (`pipeline/rescoring.py`): a run stopped or killed before every answer is scored again is
    continued by the next run, with or without `--force`."""
    assert run.role is not None
    model = run.role.role.model
    template = ctx.template(TEMPLATE)
    source = template_source(ctx.project.prompts, TEMPLATE)
    prompt = prompt_sha(source)
    selected = ctx.selected_topic_names
    forced: list[Stored] | None = None
    if ctx.force:
        # A force needs every selected answer's head, and a bad line must stop the command
        # before the force is written; a plain run only continues a force.
        forced = await read_in_thread(lambda: usable_answers(ctx.project, selected))
    heads = [] if forced is None else [(s.example.id, s.example.topic) for s in forced]
    async with rescoring(ctx, run, heads) as rescore:
        redo = set(rescore.pending(selected))
        if forced is None:
            pending, skipped = await read_in_thread(
                lambda: unscored_except(ctx.project, selected, model, source, redo)
            )
        else:
            answers = forced
            pending, skipped = await read_in_thread(
                lambda: unscored_among(
                    answers, ctx.project.data_file("quality"), model, source, redo
                )
            )
        run.skipped(count=skipped)
        streak = UnscoredStreak("`[quality] judge`", model, "score", FIX)
        run.start(len(pending))
        await _score(ctx, run, pending, template, model, prompt, streak)


async def _score(
    ctx: StageContext,
    run: StageRun,
    pending: list[Stored],
    template: Template,
    model: str,
    prompt: str,
    streak: UnscoredStreak,
) -> None:
    """Score each pending answer, appending each score as it comes."""
    path = ctx.project.data_file("quality")
    async with appending(path) as appender:

        async def score(stored: Stored) -> None:
            item = stored.example.id
            question, answer = question_and_answer(stored.example)
            request = run.request(template.render(question=question, answer=answer))
            reply = ""
            for ask in range(ASKS):
                try:
                    paid = await run.complete(request, item)
                except LlmError as error:
                    run.failed(item, error)
                    return
                if paid is None:
                    return
                reply = paid.completion.content
                parsed = parse_score(reply)
                if parsed is not None:
                    streak.scored()
                    scored = QualityScore(
                        item, stored.sha, parsed.score, parsed.reason, model, prompt
                    )
                    appender.append(scored.to_json())
                    run.done(item, paid.usage, paid.cost, estimated=paid.estimated)
                    return
                if ask + 1 < ASKS:
                    run.retrying(item, "the judge's reply has no score; asking again")
                if not run.admitting():
                    return
            run.failed(item, UnscoredReply(ASKS))
            if (stop := streak.unscored(reply)) is not None:
                run.stop(stop)

        await run.each(pending, score)
