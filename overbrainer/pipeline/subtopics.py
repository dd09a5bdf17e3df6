"""Stage `subtopics`: ask the generator for each selected topic's missing subtopics (§7)."""

from __future__ import annotations

import logging

import attrs

from overbrainer.config.settings import Topic
from overbrainer.llm import LlmError
from overbrainer.model.usage import Usage
from overbrainer.pipeline.ask import add_cost, ask_list
from overbrainer.pipeline.blocking import appending, read_in_thread
from overbrainer.pipeline.engine import StageContext, StageRun
from overbrainer.pipeline.imported import imported_ids
from overbrainer.pipeline.replacing import Replacement, replacing
from overbrainer.pipeline.shortfall import Shortfall
from overbrainer.project.templates import Template
from overbrainer.storage import (
    Appender,
    RejectedSubtopic,
    Subtopic,
    read_current,
    read_records,
    rejected_from_json,
    subtopic_id,
)

log = logging.getLogger(__name__)

STOPPED_SHORT = (
    "topic `{name}`: stopped at {n} of {target} subtopics, the generator kept repeating itself"
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
    imported = await read_in_thread(lambda: imported_ids(ctx.project))
    async with replacing(ctx, run, "subtopics") as replacement:
        await _fill_topics(ctx, run, replacement, template, rejected, stored, imported)


async def _fill_topics(
    ctx: StageContext,
    run: StageRun,
    replacement: Replacement,
    template: Template,
    rejected: list[RejectedSubtopic],
    stored: list[Subtopic],
    imported: frozenset[str],
) -> None:
    old = replacement.old_ids(ctx.selected_topic_names)
    forced = replacement.pending(ctx.selected_topic_names)
    have: dict[str, set[str]] = {topic.name: set() for topic in ctx.topics}
    mine: dict[str, set[str]] = {topic.name: set() for topic in ctx.topics}
    for subtopic in stored:
        if subtopic.topic in have and subtopic.id in imported:
            # A user's imported questions: never counted, never replaced by a force.
            have[subtopic.topic].add(subtopic.id)
        elif subtopic.topic in have and subtopic.id not in old:
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
            await replacement.complete(topic.name, topic.name, mine[topic.name] | imported)
    run.skipped(count=len(ctx.topics) - len(short))
    run.start(len(short))
    async with appending(ctx.project.data_file("subtopics")) as appender:
        shortfall = Shortfall("topic", "subtopics")
        filler = _Filler(ctx, run, template, appender, replacement, shortfall, imported)
        for topic in short:
            if not run.admitting():
                break
            with run.item_in_flight():
                await filler.fill(topic, have[topic.name], mine[topic.name])
        filler.shortfall.warn(run.stage)


@attrs.frozen
class _Filler:
    """What filling a topic needs: the stage, its template and file, its force, its shortfall."""

    ctx: StageContext
    run: StageRun
    template: Template
    appender: Appender
    replacement: Replacement
    shortfall: Shortfall
    imported: frozenset[str]

    async def fill(self, topic: Topic, avoid: set[str], kept: set[str]) -> None:
        """Ask for the topic's missing subtopics until it is full or the generator stops giving
        new ones (`max(max_retries, 1)` answers in a row with no new name), as `questions`
        fills a subtopic; the reference asks once and leaves a short topic to the next run.

        `avoid` (stored and rejected IDs) and `kept` (the topic's current IDs) grow. Under a
        force, the topic's old subtopics are dropped once this ends with `done`.
        """
        run = self.run
        patience = max(self.ctx.settings.pipeline.max_retries, 1)
        stalls = 0
        usage = Usage()
        cost: float | None = None
        estimated = False
        written = 0
        while len(kept) < topic.subtopics and stalls < patience:
            if not run.admitting():
                return
            missing = topic.subtopics - len(kept)
            prompt = self.template.render(
                topic=topic.name, description=topic.description, count=missing
            )
            try:
                asked = await ask_list(run, topic.name, prompt)
            except LlmError as error:
                run.failed(topic.name, error)
                return
            if asked is None:
                return
            usage, cost = usage + asked.usage, add_cost(cost, asked.cost)
            estimated = estimated or asked.estimated
            new = new_subtopics(topic.name, asked.items, avoid, missing)
            # One write per answer: a crash keeps its whole new set or none of it.
            self.appender.append_all(subtopic.to_json() for subtopic in new)
            kept.update(subtopic.id for subtopic in new)
            written += len(new)
            stalls = 0 if new else stalls + 1
        if len(kept) < topic.subtopics:
            log.warning(STOPPED_SHORT.format(name=topic.name, n=len(kept), target=topic.subtopics))
        self.shortfall.add(len(kept), topic.subtopics)
        await self.replacement.complete(topic.name, topic.name, kept | self.imported)
        run.done(topic.name, usage, cost, estimated=estimated, written=written)
