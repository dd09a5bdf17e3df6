"""Stage `questions`: fill each subtopic with new questions, dropping near-duplicates (§8).

Each topic has one deduplicator, seeded with the topic's stored and rejected questions, and
one lock: a slot (one subtopic) holds it while its batch is admitted and appended, so the
topic admits one batch at a time while up to `concurrency` slots ask the generator at once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import attrs
import trio

from overbrainer.config.settings import Topic
from overbrainer.llm.connect import EMBEDDER
from overbrainer.llm.errors import LlmError
from overbrainer.model.usage import Usage
from overbrainer.pipeline.ask import add_cost, ask_list
from overbrainer.pipeline.blocking import appending, read_in_thread, write_in_thread
from overbrainer.pipeline.dedup import Deduplicator, Embed
from overbrainer.pipeline.engine import StageContext, StageRun
from overbrainer.storage.ids import question_id
from overbrainer.storage.jsonl import Appender, read_records
from overbrainer.storage.records import Question, RejectedQuestion, Subtopic, rejected_from_json

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


def _embedder(ctx: StageContext) -> Embed | None:
    role = ctx.roles.get(EMBEDDER)
    return None if role is None else role.client.embed


async def _fill(ctx: StageContext, run: StageRun, slot: _Slot, appender: Appender) -> None:
    """Ask for batches until the subtopic is full or the generator stops giving new ones."""
    pipeline = ctx.settings.pipeline
    subtopic, topic = slot.subtopic, slot.state.topic
    target = topic.questions_per_subtopic
    patience = max(pipeline.max_retries, 1)
    stalls = 0
    usage = Usage()
    cost: float | None = None
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
    run.done(subtopic.id, usage, cost, written=written)


async def _seed(run: StageRun, state: _TopicState, seeds: Sequence[str]) -> bool:
    """Seed a topic's deduplicator; False (the topic failed) when that fails non-fatally."""
    try:
        await state.dedup.record(seeds)
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


def _read_stored(ctx: StageContext) -> _Stored:
    """The selected subtopics, their stored questions, and every text each topic has seen.

    Blocking (reads, and with `--force` an fsync'd rewrite): a worker thread's job.
    """
    selected = ctx.selected_topic_names
    subtopics = [
        s
        for s in read_records(ctx.project.data_file("subtopics"), Subtopic.from_json)
        if s.topic in selected
    ]
    # Every file is read before `--force` rewrites one, so a bad line fails with nothing changed.
    rejected = [
        r
        for r in read_records(ctx.project.data_file("rejected"), rejected_from_json)
        if isinstance(r, RejectedQuestion) and r.topic in selected
    ]
    stored = ctx.stored("questions", Question.from_json)
    by_subtopic: dict[str, list[str]] = {}
    by_topic: dict[str, list[str]] = {name: [] for name in selected}
    for question in stored:
        if question.topic in selected:
            by_subtopic.setdefault(question.subtopic_id, []).append(question.text)
            by_topic[question.topic].append(question.text)
    for record in rejected:
        by_topic[record.topic].append(record.text)
    return _Stored(subtopics, by_subtopic, by_topic)


async def questions_stage(ctx: StageContext, run: StageRun) -> None:
    """Fill every subtopic of the selected topics up to `questions_per_subtopic`."""
    pipeline = ctx.settings.pipeline
    in_thread = write_in_thread if ctx.force else read_in_thread
    known = await in_thread(lambda: _read_stored(ctx))
    subtopics, by_subtopic, by_topic = known.subtopics, known.by_subtopic, known.by_topic

    run.start(len(subtopics))
    embed = _embedder(ctx)
    slots: list[_Slot] = []
    for topic in ctx.topics:
        own = [s for s in subtopics if s.topic == topic.name]
        target = topic.questions_per_subtopic
        if all(len(by_subtopic.get(s.id, ())) >= target for s in own):
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

    async with appending(ctx.project.data_file("questions")) as appender:

        async def fill(slot: _Slot) -> None:
            await _fill(ctx, run, slot, appender)

        await run.each(slots, fill)
