"""Stage `answers`: the parent answers each pending question; each answer is stored at once."""

from __future__ import annotations

import logging
import re

from overbrainer.config.settings import Protocol, Role
from overbrainer.llm.errors import LlmError
from overbrainer.llm.types import Completion
from overbrainer.model.finish import FinishReason, ReasoningKind
from overbrainer.pipeline.blocking import appending, read_in_thread, write_in_thread
from overbrainer.pipeline.engine import StageContext, StageRun
from overbrainer.storage.jsonl import read_records
from overbrainer.storage.records import (
    Example,
    Exclusion,
    Message,
    Meta,
    Question,
    example_id,
)

log = logging.getLogger(__name__)

ANTHROPIC_HIDES = (
    "the anthropic protocol never returns raw reasoning: "
    "every answer will be excluded from training"
)
MODEL_HIDES = (
    "this model hides or summarizes its reasoning, so none of it is treated as raw: "
    "every answer will be excluded from training"
)
_O_SERIES = re.compile(r"o\d")


def hiding_warning(protocol: Protocol, model: str) -> str | None:
    """Why this parent never returns raw reasoning (§9.3), or None when it may."""
    if protocol is Protocol.ANTHROPIC:
        return ANTHROPIC_HIDES
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
    if not completion.content.strip():
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


def _answered(ctx: StageContext) -> set[str]:
    """The IDs of the stored answers, after `--force` removed the selected topics' ones."""
    path = ctx.project.data_file("answers")
    if not ctx.force:
        return set(read_records(path, example_id))
    return {example.id for example in ctx.stored("answers", Example.from_json)}


def _pending(ctx: StageContext) -> tuple[list[Question], int]:
    """The selected questions still to answer, in file order, and how many are answered.

    Blocking: it reads every question and every stored answer (a worker thread's job).
    """
    questions = read_records(ctx.project.data_file("questions"), Question.from_json)
    answered = _answered(ctx)
    selected = ctx.selected_topic_names
    pending: list[Question] = []
    seen: set[str] = set()
    skipped = 0
    for question in questions:
        if question.topic not in selected:
            continue
        if question.id in answered:
            skipped += 1
        elif question.id not in seen:
            seen.add(question.id)
            pending.append(question)
    return pending, skipped


async def answers_stage(ctx: StageContext, run: StageRun) -> None:
    """Answer every selected question not in `answers.jsonl`, `concurrency` at a time."""
    assert run.role is not None
    role_client = run.role
    role = role_client.role
    # Rendered first, so a template that cannot render fails before `--force` rewrites.
    template = ctx.template("answer_system.txt")
    systems = {
        topic.name: template.render(topic=topic.name, description=topic.description)
        for topic in ctx.topics
    }
    in_thread = write_in_thread if ctx.force else read_in_thread
    pending, skipped = await in_thread(lambda: _pending(ctx))
    run.skipped(count=skipped)

    protocol = ctx.settings.provider_of(role).protocol
    warning = hiding_warning(protocol, role.model)
    if warning is not None and role.reasoning:
        log.warning("parent %s: %s", role.model, warning)
    keep_system = ctx.settings.pipeline.include_system_prompt
    run.start(len(pending))

    async with appending(ctx.project.data_file("answers")) as appender:

        async def answer(question: Question) -> None:
            system = systems[question.topic]
            try:
                completion = await role_client.client.complete(
                    run.request(question.text, system), run.on_retry(question.id), gate=run
                )
            except LlmError as error:
                run.failed(question.id, error)
                return
            cost = run.add_usage(completion.usage)
            example = build_example(
                question, completion, role, system if keep_system else None, warning is not None
            )
            appender.append(example.to_json())
            run.done(question.id, completion.usage, cost, excluded=not example.usable)

        await run.each(pending, answer)
