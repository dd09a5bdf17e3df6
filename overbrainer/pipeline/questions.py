"""Stage `questions`: fill each subtopic with new questions, dropping near-duplicates (§8).

Each topic has one deduplicator, seeded with the topic's stored and rejected questions, and
one lock: a slot (one subtopic) holds it while its batch is admitted and appended, so the
topic admits one batch at a time while up to `concurrency` slots ask the generator at once.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence

import attrs
import trio

from overbrainer.config.settings import Topic
from overbrainer.llm import EMBEDDER, LlmError, RetryHalted
from overbrainer.model.usage import Usage
from overbrainer.pipeline.ask import add_cost, ask_list
from overbrainer.pipeline.blocking import appending, read_in_thread
from overbrainer.pipeline.dedup import Deduplicator, Embed
from overbrainer.pipeline.engine import StageContext, StageRun
from overbrainer.pipeline.imported import imported_ids
from overbrainer.pipeline.questions_left import all_filled
from overbrainer.pipeline.replacing import Replacement, replacing
from overbrainer.pipeline.shortfall import Shortfall
from overbrainer.storage import (
    Appender,
    Question,
    RejectedQuestion,
    Subtopic,
    question_id,
    read_current,
    read_records,
    rejected_from_json,
)

log = logging.getLogger(__name__)

STOPPED_SHORT = (
    "subtopic `{name}`: stopped at {n} of {target} questions, the generator kept repeating itself"
)


@attrs.define
class _TopicState:
    """A topic's shared deduplicator and the lock around admit-and-append."""

    topic: Topic
    dedup: Deduplicator
    lock: trio.Lock = attrs.field(factory=trio.Lock)


@attrs.define
class _Slot:
    """One subtopic to fill: what it has so far and its topic's state."""

    subtopic: Subtopic
    accepted: list[str]
    state: _TopicState


def _embedder(ctx: StageContext, run: StageRun) -> Embed | None:
    role = ctx.roles.get(EMBEDDER)
    return None if role is None else functools.partial(role.client.embed, gate=run)


def _kept(slot: _Slot) -> set[str]:
    """The IDs of the slot's current (not replaced) questions."""
    return {question_id(slot.subtopic.id, text) for text in slot.accepted}


async def _fill(
    ctx: StageContext,
    run: StageRun,
    slot: _Slot,
    appender: Appender,
    replacement: Replacement,
    shortfall: Shortfall,
) -> None:
    """Ask for batches until the subtopic is full or the generator stops giving new ones.

    Under a force, the subtopic's old questions are dropped once this ends with `done`.
    """
    pipeline = ctx.settings.pipeline
    subtopic, topic = slot.subtopic, slot.state.topic
    target = topic.questions_per_subtopic
    patience = max(pipeline.max_retries, 1)
    stalls = 0
    usage = Usage()
    cost: float | None = None
    estimated = False
    written = 0
    template = ctx.template("questions.txt")
    while len(slot.accepted) < target and stalls < patience:
        if not run.admitting():
            return
        count = min(pipeline.question_batch_size, target - len(slot.accepted))
        prompt = template.render(
            topic=topic.name,
            description=topic.description,
            subtopic=subtopic.name,
            count=count,
            accepted=list(slot.accepted),
        )
        try:
            asked = await ask_list(run, subtopic.id, prompt)
            if asked is None:
                return
            usage, cost = usage + asked.usage, add_cost(cost, asked.cost)
            estimated = estimated or asked.estimated
            async with slot.state.lock:
                admitted = await slot.state.dedup.admit(asked.items[:count])
                for text in admitted:
                    question = Question(
                        question_id(subtopic.id, text), topic.name, subtopic.id, subtopic.name, text
                    )
                    appender.append(question.to_json())
        except LlmError as error:
            run.failed(subtopic.id, error)
            return
        stalls = 0 if admitted else stalls + 1
        written += len(admitted)
        slot.accepted.extend(admitted)
    if len(slot.accepted) < target:
        log.warning(STOPPED_SHORT.format(name=subtopic.name, n=len(slot.accepted), target=target))
    shortfall.add(len(slot.accepted), target)
    await replacement.complete(topic.name, subtopic.id, _kept(slot))
    run.done(subtopic.id, usage, cost, estimated=estimated, written=written)


async def _seed(run: StageRun, state: _TopicState, seeds: Sequence[str]) -> bool:
    """Seed a topic's deduplicator; False (the topic failed) when that fails non-fatally."""
    try:
        await state.dedup.record(seeds)
    except RetryHalted:
        return False
    except LlmError as error:
        run.failed(state.topic.name, error)
        return False
    return True


@attrs.frozen
class _Stored:
    """What the stage starts from: the selected subtopics and their topics' known texts."""

    subtopics: list[Subtopic]
    by_subtopic: dict[str, list[str]]
    by_topic: dict[str, list[str]]
    counts: dict[str, int]
    """The questions each subtopic has (`by_subtopic` is left empty when all are full)."""


def _read_stored(ctx: StageContext, old: set[str]) -> _Stored:
    """The selected subtopics, their stored questions, and every text each topic has seen.

    Questions in `old` (those a force is replacing) count for nothing: they stay stored until
    their subtopic's new set is complete, but neither fill it nor block their own text.
    Imported subtopics are left out (the generator never fills them, a force never replaces
    them), but their questions still seed their topic's deduplicator.
    Blocking (reads): a worker thread's job.
    """
    selected = ctx.selected_topic_names
    project = ctx.project
    imported = imported_ids(project)
    subtopics = [
        s
        for s in read_current(
            project.data_file("subtopics"),
            project.force_state("subtopics"),
            Subtopic.from_json,
            lambda subtopic: subtopic.id,
        )
        if s.topic in selected and s.id not in imported
    ]
    rejected = [
        r
        for r in read_records(project.data_file("rejected"), rejected_from_json)
        if isinstance(r, RejectedQuestion) and r.topic in selected
    ]
    if not old and not ctx.force and not project.force_state("questions").exists():
        targets = {topic.name: topic.questions_per_subtopic for topic in ctx.topics}
        filled = all_filled(project, selected, targets, subtopics)
        if filled is not None:  # nothing to fill: no text is needed
            return _Stored(subtopics, {}, {}, filled)
    stored = read_current(
        project.data_file("questions"),
        project.force_state("questions"),
        Question.from_json,
        lambda question: question.id,
    )
    by_subtopic: dict[str, list[str]] = {}
    by_topic: dict[str, list[str]] = {name: [] for name in selected}
    for question in stored:
        if question.topic in selected and (
            question.id not in old or question.subtopic_id in imported
        ):
            by_subtopic.setdefault(question.subtopic_id, []).append(question.text)
            by_topic[question.topic].append(question.text)
    for record in rejected:
        by_topic[record.topic].append(record.text)
    counts = {subtopic.id: len(by_subtopic.get(subtopic.id, ())) for subtopic in subtopics}
    return _Stored(subtopics, by_subtopic, by_topic, counts)


async def questions_stage(ctx: StageContext, run: StageRun) -> None:
    """Fill every subtopic of the selected topics up to `questions_per_subtopic`."""
    if ctx.force:
        # Read once before the force begins, so that a bad data line (rejected.jsonl
        # included) stops the command before its force state is written.
        await read_in_thread(lambda: _read_stored(ctx, set()))
    async with replacing(ctx, run, "questions") as replacement:
        await _fill_subtopics(ctx, run, replacement)


async def _fill_subtopics(ctx: StageContext, run: StageRun, replacement: Replacement) -> None:
    pipeline = ctx.settings.pipeline
    old = replacement.old_ids(ctx.selected_topic_names)
    known = await read_in_thread(lambda: _read_stored(ctx, old))
    subtopics, by_subtopic, by_topic = known.subtopics, known.by_subtopic, known.by_topic
    forced = replacement.pending(ctx.selected_topic_names)
    replacement.forget(set(forced) - {subtopic.id for subtopic in subtopics})

    run.start(len(subtopics))
    embed = _embedder(ctx, run)
    slots: list[_Slot] = []
    for topic in ctx.topics:
        own = [s for s in subtopics if s.topic == topic.name]
        target = topic.questions_per_subtopic
        full = [s for s in own if known.counts[s.id] >= target]
        for subtopic in full:
            # A new set stored by a run that stopped before saying so.
            texts = by_subtopic.get(subtopic.id, ())
            kept = {question_id(subtopic.id, text) for text in texts}
            await replacement.complete(topic.name, subtopic.id, kept)
        if len(full) == len(own):
            # Nothing to fill: not seeded, so its questions are not embedded again.
            for subtopic in own:
                run.skipped(subtopic.id)
            continue
        if not run.admitting():
            return
        dedup = Deduplicator(pipeline.dedup_threshold, pipeline.embedding_threshold, embed)
        state = _TopicState(topic, dedup)
        if not await _seed(run, state, by_topic[topic.name]):
            continue
        for subtopic in own:
            accepted = list(by_subtopic.get(subtopic.id, ()))
            if len(accepted) >= target:
                run.skipped(subtopic.id)
            else:
                slots.append(_Slot(subtopic, accepted, state))
    # Slots go in subtopics.jsonl order, across topics.
    order = {s.id: index for index, s in enumerate(subtopics)}
    slots.sort(key=lambda slot: order[slot.subtopic.id])

    shortfall = Shortfall("subtopic", "questions")
    async with appending(ctx.project.data_file("questions")) as appender:

        async def fill(slot: _Slot) -> None:
            await _fill(ctx, run, slot, appender, replacement, shortfall)

        await run.each(slots, fill)
    shortfall.warn(run.stage)
