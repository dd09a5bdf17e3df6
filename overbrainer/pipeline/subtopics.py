"""Stage `subtopics`: ask the generator for each selected topic's missing subtopics (§7)."""

from __future__ import annotations

from overbrainer.llm import LlmError
from overbrainer.pipeline.ask import ask_list
from overbrainer.pipeline.blocking import appending, read_in_thread
from overbrainer.pipeline.engine import StageContext, StageRun
from overbrainer.pipeline.replacing import Replacement, replacing
from overbrainer.project.templates import Template
from overbrainer.storage import (
    RejectedSubtopic,
    Subtopic,
    read_current,
    read_records,
    rejected_from_json,
    subtopic_id,
)


def new_subtopics(topic: str, names: list[str], avoid: set[str], missing: int) -> list[Subtopic]:
    """The first `missing` names whose ID is neither in `avoid` nor repeated; `avoid` grows."""
    kept: list[Subtopic] = []
    for name in names:
        if len(kept) == missing:
            break
        sid = subtopic_id(topic, name)
        if sid in avoid:
            continue
        avoid.add(sid)
        kept.append(Subtopic(sid, topic, name))
    return kept


def _read_stored(ctx: StageContext) -> tuple[list[RejectedSubtopic], list[Subtopic]]:
    """The rejected subtopics and the stored ones (as readers see them: a later record of an
    ID replaces an earlier one, a force's dropped records are gone). Blocking: reads."""
    rejected = [
        r
        for r in read_records(ctx.project.data_file("rejected"), rejected_from_json)
        if isinstance(r, RejectedSubtopic)
    ]
    stored = read_current(
        ctx.project.data_file("subtopics"),
        ctx.project.force_state("subtopics"),
        Subtopic.from_json,
        lambda subtopic: subtopic.id,
    )
    return rejected, stored


async def subtopics_stage(ctx: StageContext, run: StageRun) -> None:
    """Fill each selected topic up to its `subtopics` count, one topic after another.

    Under a force, a topic's old subtopics count for nothing here (they are being replaced)
    and stay stored until its new set is: then they are dropped at once.
    """
    template = ctx.template("subtopics.txt")
    # Read first, so that a bad data line fails before a force begins.
    rejected, stored = await read_in_thread(lambda: _read_stored(ctx))
    async with replacing(ctx, "subtopics") as replacement:
        await _fill_topics(ctx, run, replacement, template, rejected, stored)


async def _fill_topics(
    ctx: StageContext,
    run: StageRun,
    replacement: Replacement,
    template: Template,
    rejected: list[RejectedSubtopic],
    stored: list[Subtopic],
) -> None:
    old = replacement.old_ids(ctx.selected_topic_names)
    forced = replacement.pending(ctx.selected_topic_names)
    have: dict[str, set[str]] = {topic.name: set() for topic in ctx.topics}
    mine: dict[str, set[str]] = {topic.name: set() for topic in ctx.topics}
    for subtopic in stored:
        if subtopic.topic in have and subtopic.id not in old:
            have[subtopic.topic].add(subtopic.id)
            mine[subtopic.topic].add(subtopic.id)
    counts = {name: len(ids) for name, ids in mine.items()}
    for record in rejected:
        if record.topic in have:
            have[record.topic].add(record.id)
    short = [topic for topic in ctx.topics if counts[topic.name] < topic.subtopics]
    for topic in ctx.topics:
        if topic.name in forced and topic not in short:
            # Its new set was stored by a run that stopped before saying so.
            await replacement.complete(topic.name, topic.name, mine[topic.name])
    run.skipped(count=len(ctx.topics) - len(short))
    run.start(len(short))
    async with appending(ctx.project.data_file("subtopics")) as appender:
        for topic in short:
            if not run.admitting():
                return
            missing = topic.subtopics - counts[topic.name]
            prompt = template.render(topic=topic.name, description=topic.description, count=missing)
            try:
                asked = await ask_list(run, topic.name, prompt)
            except LlmError as error:
                run.failed(topic.name, error)
                continue
            if asked is None:
                return
            new = new_subtopics(topic.name, asked.items, have[topic.name], missing)
            # One write: a crash keeps the topic's whole new set or none of it.
            appender.append_all(subtopic.to_json() for subtopic in new)
            kept = mine[topic.name] | {subtopic.id for subtopic in new}
            await replacement.complete(topic.name, topic.name, kept)
            run.done(
                topic.name, asked.usage, asked.cost, estimated=asked.estimated, written=len(new)
            )
