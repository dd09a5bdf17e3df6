"""What the paid stages still have to do, and about how many tokens that is, before spending.

Items are what each stage works on: topics short of subtopics (one request each), subtopics
short of questions (one request per `question_batch_size` questions missing), questions without
an answer (one request each), usable answers the `[quality] judge` has not scored (one request
each; answers still to come count too, at the answer prior's size). Stages not run yet are
predicted from the topics' counts in the configuration, so a fresh project gets an estimate
of the whole dataset.

Tokens per request come from this project's history where the stage has answered requests
before (its average input and output per item handled, excluded answers included), else from
the prompt: input as the prompt's UTF-8 bytes / 3 (the rule the pipeline uses for replies
without usage), output as the role's prior `OUTPUT_PRIOR` (at most its `max_tokens`). The cost
range runs from those expected tokens (low) to every request writing its whole `max_tokens`
(high, the spend cap's worst case).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import attrs

from overbrainer.config.settings import Role, Settings, Topic
from overbrainer.events.types import Stage
from overbrainer.model.usage import Price, Usage
from overbrainer.pipeline.context import sample_variables
from overbrainer.pipeline.quality import TEMPLATE as QUALITY_TEMPLATE
from overbrainer.pipeline.quality import unscored
from overbrainer.pipeline.replacing import answers_to_redo, replaced_ids
from overbrainer.project.directory import Project
from overbrainer.project.templates import Template, template_source
from overbrainer.storage import (
    Question,
    Subtopic,
    example_id,
    read_current,
    read_history,
    read_records,
)

OUTPUT_PRIOR = {
    Stage.SUBTOPICS: 400,
    Stage.QUESTIONS: 400,
    Stage.ANSWERS: 1200,
    Stage.QUALITY: 60,
}
"""Output tokens a request is expected to write when the history has none of its stage: the
generator's list of subtopics or of a batch of questions, the parent's answer with its
reasoning, the judge's score and one-sentence reason. A quarter of `max_tokens` (4,096 of the
default 16,384) put the low end far above what runs cost."""
BYTES_PER_TOKEN = 3
PAID_STAGES = (Stage.SUBTOPICS, Stage.QUESTIONS, Stage.ANSWERS, Stage.QUALITY)
BATCH_STAGES = frozenset({Stage.ANSWERS})
"""Stages a provider's batch API can run (answers only)."""


@attrs.frozen
class StageEstimate:
    """One stage's remaining work: items, requests and tokens (expected, and at most)."""

    stage: Stage
    items: int
    requests: int
    expected: Usage
    worst: Usage
    from_history: bool

    def cost(self, price: Price | None, discount: float = 1.0) -> tuple[float, float] | None:
        """Low and high cost in USD at `price` (times `discount`); None when it is unknown."""
        if price is None:
            return None
        return (price.cost(self.expected) * discount, price.cost(self.worst) * discount)


@attrs.frozen
class _Remaining:
    items: int
    requests: int
    prompt_bytes: int


def _stored(project: Project) -> tuple[list[Subtopic], list[Question], set[str]]:
    """Subtopics and questions as readers see them, and the answered question IDs. Blocking."""
    subtopics = read_current(
        project.data_file("subtopics"),
        project.force_state("subtopics"),
        Subtopic.from_json,
        lambda subtopic: subtopic.id,
    )
    questions = read_current(
        project.data_file("questions"),
        project.force_state("questions"),
        Question.from_json,
        lambda question: question.id,
    )
    # What an unfinished `--force` still replaces counts as not done: the next run redoes it.
    old_subtopics = replaced_ids(project, "subtopics")
    old_questions = replaced_ids(project, "questions")
    subtopics = [subtopic for subtopic in subtopics if subtopic.id not in old_subtopics]
    questions = [question for question in questions if question.id not in old_questions]
    stored = read_records(project.data_file("answers"), example_id)
    topics = frozenset(question.topic for question in questions)
    answered = set(stored) - answers_to_redo(project, stored, topics)
    return subtopics, questions, answered


def _remaining(
    topics: Sequence[Topic], batch: int, stored: tuple[list[Subtopic], list[Question], set[str]]
) -> dict[Stage, _Remaining]:
    subtopics, questions, answered = stored
    by_topic: dict[str, list[Subtopic]] = {}
    for subtopic in subtopics:
        by_topic.setdefault(subtopic.topic, []).append(subtopic)
    per_subtopic: dict[str, int] = {}
    for question in questions:
        per_subtopic[question.subtopic_id] = per_subtopic.get(question.subtopic_id, 0) + 1
    names = {topic.name for topic in topics}
    sub_items = sub_bytes = q_items = q_requests = q_bytes = a_items = a_bytes = 0
    for topic in topics:
        have = by_topic.get(topic.name, [])
        description = len((topic.description or "").encode())
        if len(have) < topic.subtopics:
            sub_items += 1
            sub_bytes += len(topic.name.encode()) + description
        for subtopic in have[: topic.subtopics]:
            missing = max(topic.questions_per_subtopic - per_subtopic.get(subtopic.id, 0), 0)
            if missing:
                q_items += 1
                requests = math.ceil(missing / batch)
                q_requests += requests
                q_bytes += requests * (len(subtopic.name.encode()) + description)
            a_items += missing
            a_bytes += missing * len(subtopic.name.encode())
        predicted = max(topic.subtopics - len(have), 0)
        q_items += predicted
        q_requests += predicted * math.ceil(topic.questions_per_subtopic / batch)
        q_bytes += predicted * math.ceil(topic.questions_per_subtopic / batch) * description
        a_items += predicted * topic.questions_per_subtopic
    for question in questions:
        if question.topic in names and question.id not in answered:
            a_items += 1
            a_bytes += len(question.text.encode())
    return {
        Stage.SUBTOPICS: _Remaining(sub_items, sub_items, sub_bytes),
        Stage.QUESTIONS: _Remaining(q_items, q_requests, q_bytes),
        Stage.ANSWERS: _Remaining(a_items, a_items, a_bytes),
    }


def _quality_remaining(
    project: Project, settings: Settings, topics: Sequence[Topic], answers_to_come: int
) -> _Remaining:
    """Usable answers of `topics` the judge has not scored (by this prompt), plus those still
    to come; the bytes of the stored ones' question and answer. Blocking: reads the answers."""
    judge = settings.quality.judge
    assert judge is not None
    source = template_source(project.prompts, QUALITY_TEMPLATE)
    pending, _ = unscored(project, frozenset(t.name for t in topics), judge.model, source)
    stored = sum(item.text_bytes for item in pending)
    coming = answers_to_come * OUTPUT_PRIOR[Stage.ANSWERS] * BYTES_PER_TOKEN
    items = len(pending) + answers_to_come
    return _Remaining(items, items, stored + coming)


def _history_averages(project: Project) -> dict[Stage, tuple[float, float, float]]:
    """Per stage: input and output tokens per item, and requests per item (1 where unknown)."""
    totals: dict[Stage, list[int]] = {}
    for record in read_history(project.history):
        handled = record.done + record.excluded
        if handled <= 0 or record.stage not in PAID_STAGES or record.cost_estimated:
            continue
        total = totals.setdefault(record.stage, [0, 0, 0])
        total[0] += record.input_tokens
        total[1] += record.output_tokens
        total[2] += handled
    return {stage: (i / done, o / done, 1.0) for stage, (i, o, done) in totals.items() if done}


def template_bytes(templates: Mapping[str, Template], topics: Sequence[Topic]) -> dict[str, int]:
    """Each stage template's rendered size in UTF-8 bytes (the first topic's sample values)."""
    if not topics:
        return {}
    return {
        name: len(templates[name].render(**variables).encode())
        for name, variables in sample_variables(topics[0]).items()
        if name in templates
    }


def estimate_stages(
    project: Project,
    settings: Settings,
    stages: Sequence[Stage],
    templates: Mapping[str, Template],
    topics: Sequence[Topic] | None = None,
) -> list[StageEstimate]:
    """The estimate of each paid stage in `stages` (blocking: reads the data and history)."""
    chosen = tuple(settings.topics if topics is None else topics)
    sizes = template_bytes(templates, chosen)
    remaining = _remaining(chosen, settings.pipeline.question_batch_size, _stored(project))
    if Stage.QUALITY in stages and settings.quality.judge is not None:
        to_come = remaining[Stage.ANSWERS].items if Stage.ANSWERS in stages else 0
        remaining[Stage.QUALITY] = _quality_remaining(project, settings, chosen, to_come)
    history = _history_averages(project)
    estimates = []
    for stage in stages:
        if stage not in PAID_STAGES or stage not in remaining:
            continue
        role = _role_of(settings, stage)
        left = remaining[stage]
        template = sizes.get(_template_of(stage), 0)
        worst_out = left.requests * role.max_tokens
        average = history.get(stage)
        if average is not None:
            expected = Usage(round(average[0] * left.items), round(average[1] * left.items))
            worst_in = expected.input_tokens
        else:
            prompt = left.requests * template + left.prompt_bytes
            expected = Usage(
                math.ceil(prompt / BYTES_PER_TOKEN),
                left.requests * min(OUTPUT_PRIOR[stage], role.max_tokens),
            )
            worst_in = expected.input_tokens
        estimates.append(
            StageEstimate(
                stage=stage,
                items=left.items,
                requests=left.requests,
                expected=expected,
                worst=Usage(worst_in, max(worst_out, expected.output_tokens)),
                from_history=average is not None,
            )
        )
    return estimates


def _role_of(settings: Settings, stage: Stage) -> Role:
    if stage is Stage.QUALITY and settings.quality.judge is not None:
        return settings.quality.judge
    return settings.roles.parent if stage is Stage.ANSWERS else settings.roles.generator


def _template_of(stage: Stage) -> str:
    return {
        Stage.SUBTOPICS: "subtopics.txt",
        Stage.QUESTIONS: "questions.txt",
        Stage.ANSWERS: "answer_system.txt",
        Stage.QUALITY: QUALITY_TEMPLATE,
    }[stage]


def money(value: float) -> str:
    """USD with cents, or four decimals below a dollar (as the stage lines show costs)."""
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


def estimate_line(
    estimate: StageEstimate, price: Price | None, batch_discount: float | None
) -> str:
    """`estimate: answers: 1,200 to do (1,200 requests); tokens about 240,000 in, 1,966,080
    out (history); $0.48-$6.29 ($0.24-$3.15 batch)`."""
    basis = "history" if estimate.from_history else "from the prompts"
    line = (
        f"estimate: {estimate.stage}: {estimate.items:,} to do ({_requests(estimate.requests)}); "
        f"tokens about {estimate.expected.input_tokens:,} in, "
        f"{estimate.expected.output_tokens:,} out ({basis})"
    )
    cost = estimate.cost(price)
    if cost is None:
        return line + "; cost unknown (no price for the model)"
    line += f"; {money(cost[0])}-{money(cost[1])}"
    if batch_discount is not None and estimate.stage in BATCH_STAGES:
        batch = estimate.cost(price, batch_discount)
        assert batch is not None
        line += f" ({money(batch[0])}-{money(batch[1])} batch)"
    return line


def _requests(count: int) -> str:
    return f"{count:,} request" + ("" if count == 1 else "s")
