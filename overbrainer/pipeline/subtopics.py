"""Stage `subtopics`: ask the generator for each selected topic's missing subtopics (§7)."""

from __future__ import annotations

from overbrainer.llm.errors import LlmError
from overbrainer.pipeline.ask import ask_list
from overbrainer.pipeline.blocking import appending, read_in_thread, write_in_thread
from overbrainer.pipeline.engine import StageContext, StageRun
from overbrainer.storage.ids import subtopic_id
from overbrainer.storage.jsonl import read_records
from overbrainer.storage.records import RejectedSubtopic, Subtopic, rejected_from_json


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
    """The rejected subtopics, and the stored ones after `--force` removed the selected topics'.

    Blocking (reads, and with `--force` an fsync'd rewrite): a worker thread's job.
    """
    # Every file is read before `--force` rewrites one, so a bad line fails with nothing changed.
    rejected = [
        r
        for r in read_records(ctx.project.data_file("rejected"), rejected_from_json)
        if isinstance(r, RejectedSubtopic)
    ]
    return rejected, ctx.stored("subtopics", Subtopic.from_json)


async def subtopics_stage(ctx: StageContext, run: StageRun) -> None:
    """Fill each selected topic up to its `subtopics` count, one topic after another."""
    in_thread = write_in_thread if ctx.force else read_in_thread
    rejected, stored = await in_thread(lambda: _read_stored(ctx))
    have: dict[str, set[str]] = {topic.name: set() for topic in ctx.topics}
    counts: dict[str, int] = {topic.name: 0 for topic in ctx.topics}
    for subtopic in stored:
        if subtopic.topic in have:
            have[subtopic.topic].add(subtopic.id)
            counts[subtopic.topic] += 1
    for record in rejected:
        if record.topic in have:
            have[record.topic].add(record.id)
    short = [topic for topic in ctx.topics if counts[topic.name] < topic.subtopics]
    run.skipped(count=len(ctx.topics) - len(short))
    run.start(len(short))
    template = ctx.template("subtopics.txt")
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
            kept = new_subtopics(topic.name, asked.items, have[topic.name], missing)
            for subtopic in kept:
                appender.append(subtopic.to_json())
            run.done(topic.name, asked.usage, asked.cost, written=len(kept))
