"""Stage `answers`: the parent answers each pending question; each answer is stored at once."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TypeVar

import attrs

from overbrainer.config.settings import Protocol, Role, Topic
from overbrainer.llm import (
    Completion,
    LlmError,
    ProtocolClient,
    wire_of,
    with_retry,
)
from overbrainer.model.finish import FinishReason, ReasoningKind
from overbrainer.model.rust_text import trim
from overbrainer.pipeline.answers_left import answers_left
from overbrainer.pipeline.batch_intents import resolve_intent
from overbrainer.pipeline.blocking import appending, read_in_thread
from overbrainer.pipeline.engine import StageContext, StageRun
from overbrainer.pipeline.reasoning_watch import reasoning_watch
from overbrainer.pipeline.replacing import Replacement, replacing
from overbrainer.storage import (
    Example,
    Exclusion,
    Message,
    Meta,
    Question,
    batched_questions,
    example_id,
    read_batches,
    read_current,
    read_records,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

PROTOCOL_HIDES = (
    "the {} protocol never returns raw reasoning: every answer will be excluded from training"
)
ANTHROPIC_HIDES = PROTOCOL_HIDES.format("anthropic")
MODEL_HIDES = (
    "this model hides or summarizes its reasoning, so none of it is treated as raw: "
    "every answer will be excluded from training"
)
_O_SERIES = re.compile(r"o\d")


def hiding_warning(protocol: Protocol, model: str) -> str | None:
    """Why this parent never returns raw reasoning (§9.3), or None when it may."""
    if not wire_of(protocol).raw_reasoning:
        return PROTOCOL_HIDES.format(protocol.value)
    lowered = model.lower()
    name = lowered.rsplit("/", 1)[-1]
    if name.startswith("gpt-oss"):
        return None
    if (
        lowered.startswith(("openai/", "anthropic/"))
        or name.startswith(("gpt-", "claude", "gemini"))
        or _O_SERIES.match(name)
    ):
        return MODEL_HIDES
    return None


def exclusion(completion: Completion, kind: ReasoningKind, reasoning: bool) -> Exclusion | None:
    """The first exclusion that applies to an answer, or None when it may train."""
    if completion.finish is FinishReason.LENGTH:
        return Exclusion.TRUNCATED
    if completion.finish in (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER):
        return Exclusion.REFUSED
    if not trim(completion.content):
        return Exclusion.EMPTY
    if reasoning and kind is not ReasoningKind.RAW:
        return Exclusion.NO_RAW_REASONING
    return None


def build_example(
    question: Question,
    completion: Completion,
    role: Role,
    system: str | None,
    hides: bool,
) -> Example:
    """The stored record of one answer: messages, meta and its exclusion."""
    kind = completion.reasoning.kind
    if hides and kind is ReasoningKind.RAW:
        kind = ReasoningKind.SUMMARY
    excluded = exclusion(completion, kind, role.reasoning)
    keep_reasoning = kind is ReasoningKind.RAW or excluded is not None
    assistant = Message(
        "assistant",
        completion.content,
        completion.reasoning.text if keep_reasoning else None,
    )
    messages = [] if system is None else [Message("system", system)]
    messages += [Message("user", question.text), assistant]
    meta = Meta(
        model=role.model,
        input_tokens=completion.usage.input_tokens,
        output_tokens=completion.usage.output_tokens,
        finish_reason=completion.finish,
        reasoning_kind=kind,
        excluded=excluded,
    )
    return Example(question.id, question.topic, question.subtopic, tuple(messages), meta)


@attrs.frozen
class Stored:
    """The questions and the answered question IDs, read before a force begins: a bad line
    in either file then stops the stage before it writes anything."""

    questions: list[Question]
    answered: set[str]


def read_stored(ctx: StageContext) -> Stored:
    """Every question (as readers see them) and every answered ID. Blocking: reads both files."""
    project = ctx.project
    questions = read_current(
        project.data_file("questions"),
        project.force_state("questions"),
        Question.from_json,
        lambda question: question.id,
    )
    return Stored(questions, set(read_records(project.data_file("answers"), example_id)))


def pending_questions(
    ctx: StageContext, redo: set[str], stored: Stored
) -> tuple[list[Question], int, set[str], dict[str, Question]]:
    """The selected questions to answer, in file order; how many are answered; which of the
    `redo` IDs (answers a force replaces) no longer have a question; every question by ID.

    A question is answered when `answers.jsonl` has a record of its ID, unless a force is
    still to replace that record.
    """
    selected = ctx.selected_topic_names
    pending: list[Question] = []
    skipped = 0
    for question in stored.questions:
        if question.topic not in selected:
            continue
        if question.id in stored.answered and question.id not in redo:
            skipped += 1
        else:
            pending.append(question)
    by_id = {question.id: question for question in stored.questions}
    return pending, skipped, redo - by_id.keys(), by_id


def system_prompts(ctx: StageContext, topics: Iterable[Topic]) -> dict[str, str]:
    """Each of `topics`' rendered `answer_system.txt`."""
    template = ctx.template("answer_system.txt")
    return {
        topic.name: template.render(topic=topic.name, description=topic.description)
        for topic in topics
    }


async def resolve_intents(ctx: StageContext, run: StageRun, batches: Path) -> None:
    """Look up the batches whose submit was never confirmed: a found one holds its questions
    for `answers --batch`, the others are dropped (`pipeline/batch_intents.py`)."""
    intents = [r for r in await read_in_thread(lambda: read_batches(batches)) if r.id is None]
    if not intents:
        return
    # Imported here: the batch API's modules cost every `answers` start-up ~5 ms otherwise.
    from overbrainer.llm import batch_api

    assert run.role is not None
    provider = ctx.settings.provider_of(run.role.role)
    client = run.role.client
    api = None
    if provider.batch_kind is not None and isinstance(client, ProtocolClient):
        api = batch_api(provider.batch_kind, client.http, run.role.role.model, client.dialect)

    async def call(what: str, op: Callable[[], Awaitable[T]]) -> T:
        assert isinstance(client, ProtocolClient)  # only called with an `api`
        return await with_retry(client.retry, op, run.on_retry(what), gate=run)

    for record in intents:
        await resolve_intent(api, call, batches, record)


async def answers_stage(ctx: StageContext, run: StageRun) -> None:
    """Answer every selected question not in `answers.jsonl` (or whose answer a force
    replaces), `concurrency` at a time."""
    # Rendered and read first, so that a template that cannot render or a bad data line
    # fails before a force begins or an unfinished one is settled.
    systems = system_prompts(ctx, ctx.topics)
    if ctx.force or ctx.project.force_state("answers").exists():
        await read_in_thread(lambda: answers_left(ctx.project, frozenset(), set()))
    async with replacing(ctx, run, "answers") as replacement:
        await _answer_pending(ctx, run, replacement, systems)


async def _answer_pending(
    ctx: StageContext,
    run: StageRun,
    replacement: Replacement,
    systems: dict[str, str],
) -> None:
    """Answer the pending questions, appending each answer as it comes."""
    assert run.role is not None
    role_client = run.role
    role = role_client.role
    selected = ctx.selected_topic_names
    redo = set(replacement.pending(selected))
    left = await read_in_thread(lambda: answers_left(ctx.project, selected, redo))
    pending, skipped = left.pending, left.skipped
    replacement.forget(left.gone)
    batches = ctx.project.state / "batches"
    await resolve_intents(ctx, run, batches)
    batched = await read_in_thread(lambda: batched_questions(batches))
    if batched:
        before = len(pending)
        pending = [question for question in pending if question.id not in batched]
        if len(pending) < before:
            log.warning(
                "answers: %d question(s) are in batches submitted earlier and are not asked "
                "again: collect them with `overbrainer answers --batch`",
                before - len(pending),
            )
    run.skipped(count=skipped)

    protocol = ctx.settings.provider_of(role).protocol
    warning = hiding_warning(protocol, role.model)
    if warning is not None and role.reasoning:
        log.warning("parent %s: %s", role.model, warning)
    keep_system = ctx.settings.pipeline.include_system_prompt
    watch = reasoning_watch(run.role.name, role.model, role.reasoning, warning is not None)
    run.start(len(pending))

    async with appending(ctx.project.data_file("answers")) as appender:

        async def answer(question: Question) -> None:
            system = systems[question.topic]
            try:
                paid = await run.complete(run.request(question.text, system), question.id)
            except LlmError as error:
                run.failed(question.id, error)
                return
            if paid is None:
                return
            example = build_example(
                question,
                paid.completion,
                role,
                system if keep_system else None,
                warning is not None,
            )
            appender.append(example.to_json())
            run.done(
                question.id, paid.usage, paid.cost, not example.usable, estimated=paid.estimated
            )
            if watch is not None and (stop := watch.answered(example.meta.reasoning_kind)):
                run.stop(stop)

        await run.each(pending, answer)
