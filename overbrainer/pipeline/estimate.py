"""What the paid stages still have to do, and about how many tokens that is, before spending.

Items are what each stage works on: topics short of subtopics (one request each), subtopics
short of questions (one request per `question_batch_size` questions missing), questions without
an answer (one request each), usable answers the `[quality] judge` has not scored (one request
each). Items resting on records that do not exist yet (questions of subtopics still to come,
answers still to be made) are *planned*: they count only when the stage that makes those
records is among the stages estimated, so `estimate` of a fresh project covers the whole
dataset, while the line `run` prints before its answers counts the questions its questions
stage did make, not the ones the topics asked for. The lines say how many are planned.

Tokens per request come from what this project measured where the stage has answered requests
before (its history: the average input and output per item handled, excluded answers
included), else from the prompt: input as the prompt's UTF-8 bytes / 3 (the rule the pipeline
uses for replies without usage), output as the role's floor `OUTPUT_FLOOR` (at most its
`max_tokens`). The cost range runs from those tokens (low) to every request sending a token
per prompt byte and writing its whole `max_tokens` (high: the most the spend cap lets a request
cost).
"""

from __future__ import annotations

import collections
import math
from collections.abc import Mapping, Sequence
from typing import TypeAlias

import attrs

from overbrainer.config.settings import Role, Settings, Topic
from overbrainer.events.types import Stage
from overbrainer.model.usage import Price, Usage
from overbrainer.pipeline.answers_left import answered_keys
from overbrainer.pipeline.context import sample_variables
from overbrainer.pipeline.quality import TEMPLATE as QUALITY_TEMPLATE
from overbrainer.pipeline.quality import question_and_answer
from overbrainer.pipeline.quality_left import latest_work, left_to_score
from overbrainer.pipeline.quality_scores import prompt_sha
from overbrainer.pipeline.replacing import answers_to_redo, replaced_ids
from overbrainer.pipeline.rescoring import pending_rescores
from overbrainer.pipeline.spend import LIST_FORMAT_TOKENS, MESSAGE_TOKENS
from overbrainer.project.directory import Project
from overbrainer.project.templates import Template, template_source
from overbrainer.storage import (
    Example,
    Key,
    Question,
    Subtopic,
    dropped_ids,
    id_key,
    question_heads,
    question_places,
    read_current,
    read_history,
)

OUTPUT_FLOOR = {
    Stage.SUBTOPICS: 60,
    Stage.QUESTIONS: 100,
    Stage.ANSWERS: 100,
    Stage.QUALITY: 15,
}
"""Output tokens a request is assumed to write when nothing of its stage was measured yet: a
short list of subtopic names, a batch of short questions, a short answer with its reasoning, a
bare score. A floor, not an average: answers run from about 60 tokens (a terse model, the
stand-in) to thousands (a reasoning model), and the earlier prior of 1,200 put the low end 18
times above what short answers cost; the project's own measure replaces it after one run."""
ITEM_NOUN = {
    Stage.SUBTOPICS: "topic",
    Stage.QUESTIONS: "subtopic",
    Stage.ANSWERS: "answer",
    Stage.QUALITY: "score",
}
"""What one item of a stage is, for the lines that say what the estimate rests on."""
BYTES_PER_TOKEN = 3
PAID_STAGES = (Stage.SUBTOPICS, Stage.QUESTIONS, Stage.ANSWERS, Stage.QUALITY)
BATCH_STAGES = frozenset({Stage.ANSWERS})
"""Stages a provider's batch API can run (answers only)."""
LIST_STAGES = frozenset({Stage.SUBTOPICS, Stage.QUESTIONS})
"""Stages that ask for a list, with its structured-output schema in the request."""


@attrs.frozen
class StageEstimate:
    """One stage's remaining work: items (`planned` of them on records still to be made),
    requests and tokens (the low end, and at most), and what the low end rests on."""

    stage: Stage
    model: str
    items: int
    requests: int
    expected: Usage
    worst: Usage
    measured: int
    """Items of this stage the history measured (0: the low end assumes `OUTPUT_FLOOR`)."""
    planned: int = 0

    @property
    def from_history(self) -> bool:
        """Whether the tokens per item were measured by earlier runs of the stage."""
        return self.measured > 0

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
    planned: int = 0


@attrs.frozen
class _Stored:
    """What the estimate needs of the stored records: the subtopics (a few per topic), the
    questions of each subtopic ID key, and of each topic the unanswered questions and the
    UTF-8 bytes of their text. No question or answer record is held."""

    subtopics: list[Subtopic]
    per_subtopic: collections.Counter[Key]
    unanswered: dict[str, tuple[int, int]]


def _stored(project: Project) -> _Stored:
    """The subtopics and questions as readers see them, less what an unfinished `--force`
    still replaces (it counts as not done: the next run redoes it), counted against the
    answered question IDs. Blocking: reads the subtopics whole, and of the questions and
    answers only their IDs, topics and subtopic IDs (the text of an unanswered question)."""
    subtopics = read_current(
        project.data_file("subtopics"),
        project.force_state("subtopics"),
        Subtopic.from_json,
        lambda subtopic: subtopic.id,
    )
    old_subtopics = replaced_ids(project, "subtopics")
    subtopics = [subtopic for subtopic in subtopics if subtopic.id not in old_subtopics]
    gone = dropped_ids(project.force_state("questions")) | replaced_ids(project, "questions")
    gone_keys = {id_key(found) for found in gone}
    answered = answered_keys(project)
    if project.force_state("answers").exists():
        topics = _question_topics(project, gone_keys)
        answered -= {id_key(found) for found in answers_to_redo(project, topics)}
    counted = _count_questions(project, gone_keys, answered)
    if counted is None:
        counted = _count_questions_whole(project, gone, answered)
    return _Stored(subtopics, *counted)


def _question_topics(project: Project, gone: set[Key]) -> frozenset[str]:
    """The topics of the stored questions whose ID is not in `gone`. Blocking."""
    path = project.data_file("questions")
    return frozenset(topic for (key, topic), _, _, _ in question_heads(path) if key not in gone)


_Counts: TypeAlias = tuple[collections.Counter[Key], dict[str, tuple[int, int]]]


def _count_questions(project: Project, gone: set[Key], answered: set[Key]) -> _Counts | None:
    """The questions of each subtopic ID key, and of each topic the questions not in
    `answered` with their text's bytes; None when an ID is stored twice (only a force or a
    hand edit leaves that: the whole read places such records). Changes `answered` (and
    restores it when it gives None)."""
    per_subtopic: collections.Counter[Key] = collections.Counter()
    unanswered: dict[str, tuple[int, int]] = {}
    # Every question ID seen once is in one of these: answered ones are moved out of
    # `answered`, so the IDs are held once.
    counted: set[Key] = set()
    others: set[Key] = set()
    path = project.data_file("questions")
    for (key, topic, subtopic), view, start, end in question_places(path):
        if key in gone:
            continue
        if key in answered:
            answered.remove(key)
            counted.add(key)
        elif key in counted or key in others:
            answered |= counted
            return None
        else:
            others.add(key)
            text = Question.from_json(bytes(view[start:end])).text
            items, size = unanswered.get(topic, (0, 0))
            unanswered[topic] = (items + 1, size + len(text.encode()))
        per_subtopic[subtopic] += 1
    return per_subtopic, unanswered


def _count_questions_whole(project: Project, gone: set[str], answered: set[Key]) -> _Counts:
    """`_count_questions` of the questions as `read_current` places them."""
    questions = read_current(
        project.data_file("questions"),
        project.force_state("questions"),
        Question.from_json,
        lambda question: question.id,
    )
    per_subtopic: collections.Counter[Key] = collections.Counter()
    unanswered: dict[str, tuple[int, int]] = {}
    for question in questions:
        if question.id in gone:
            continue
        per_subtopic[id_key(question.subtopic_id)] += 1
        if id_key(question.id) not in answered:
            items, size = unanswered.get(question.topic, (0, 0))
            unanswered[question.topic] = (items + 1, size + len(question.text.encode()))
    return per_subtopic, unanswered


def _remaining(
    topics: Sequence[Topic], batch: int, stored: _Stored, making: frozenset[Stage]
) -> dict[Stage, _Remaining]:
    """Each stage's items; those resting on records still to be made count only when the stage
    making them is in `making` (the stages estimated)."""
    by_topic: dict[str, list[Subtopic]] = {}
    for subtopic in stored.subtopics:
        by_topic.setdefault(subtopic.topic, []).append(subtopic)
    new_subtopics = Stage.SUBTOPICS in making
    new_questions = Stage.QUESTIONS in making
    sub_items = sub_bytes = q_items = q_requests = q_bytes = q_planned = 0
    a_items = a_bytes = a_planned = 0
    for topic in topics:
        have = by_topic.get(topic.name, [])
        description = len((topic.description or "").encode())
        if len(have) < topic.subtopics:
            sub_items += 1
            sub_bytes += len(topic.name.encode()) + description
        for subtopic in have[: topic.subtopics]:
            count = stored.per_subtopic[id_key(subtopic.id)]
            missing = max(topic.questions_per_subtopic - count, 0)
            if missing:
                q_items += 1
                requests = math.ceil(missing / batch)
                q_requests += requests
                q_bytes += requests * (len(subtopic.name.encode()) + description)
            if new_questions:
                a_items += missing
                a_planned += missing
                a_bytes += missing * len(subtopic.name.encode())
        predicted = max(topic.subtopics - len(have), 0) if new_subtopics else 0
        per_predicted = math.ceil(topic.questions_per_subtopic / batch)
        q_items += predicted
        q_planned += predicted
        q_requests += predicted * per_predicted
        q_bytes += predicted * per_predicted * description
        if new_questions:
            a_items += predicted * topic.questions_per_subtopic
            a_planned += predicted * topic.questions_per_subtopic
    for name in {topic.name for topic in topics}:
        items, size = stored.unanswered.get(name, (0, 0))
        a_items += items
        a_bytes += size
    return {
        Stage.SUBTOPICS: _Remaining(sub_items, sub_items, sub_bytes),
        Stage.QUESTIONS: _Remaining(q_items, q_requests, q_bytes, q_planned),
        Stage.ANSWERS: _Remaining(a_items, a_items, a_bytes, a_planned),
    }


def _quality_remaining(
    project: Project, settings: Settings, topics: Sequence[Topic], answers_to_come: int
) -> _Remaining:
    """Usable answers of `topics` the judge has not scored (by this prompt), plus those still
    to come; the bytes of the stored ones' question and answer. Blocking: reads the answers,
    keeping of each one to score only that size."""
    judge = settings.quality.judge
    assert judge is not None
    source = template_source(project.prompts, QUALITY_TEMPLATE)
    names = frozenset(t.name for t in topics)
    # `unscored`, keeping a size instead of each record.
    redo = pending_rescores(project, names)
    latest = latest_work(project.data_file("quality"), judge.model, prompt_sha(source))
    pending, _ = left_to_score(project.data_file("answers"), latest, names, redo, _judged_bytes)
    stored = sum(size for size, _ in pending)
    coming = answers_to_come * OUTPUT_FLOOR[Stage.ANSWERS] * BYTES_PER_TOKEN
    items = len(pending) + answers_to_come
    return _Remaining(items, items, stored + coming, answers_to_come)


def _judged_bytes(line: bytes) -> int:
    """The UTF-8 size of the question and answer the judge is shown (`Stored.text_bytes`)."""
    return sum(len(text.encode()) for text in question_and_answer(Example.from_json(line)))


def _history_averages(project: Project) -> dict[Stage, tuple[float, float, int]]:
    """Per stage: input and output tokens per item, and the items measured."""
    totals: dict[Stage, list[int]] = {}
    for record in read_history(project.history):
        handled = record.done + record.excluded
        if handled <= 0 or record.stage not in PAID_STAGES or record.cost_estimated:
            continue
        total = totals.setdefault(record.stage, [0, 0, 0])
        total[0] += record.input_tokens
        total[1] += record.output_tokens
        total[2] += handled
    return {stage: (i / done, o / done, done) for stage, (i, o, done) in totals.items() if done}


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
    making = frozenset(stages)
    remaining = _remaining(chosen, settings.pipeline.question_batch_size, _stored(project), making)
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
        prompt = left.requests * sizes.get(_template_of(stage), 0) + left.prompt_bytes
        # The most a request may send: a token per prompt byte and its framing (spend.py's
        # `worst_usage`, which the cap reserves).
        framing = 2 * MESSAGE_TOKENS + (LIST_FORMAT_TOKENS if stage in LIST_STAGES else 0)
        worst_in = prompt + left.requests * framing
        measured = history.get(stage)
        if measured is not None:
            expected = Usage(round(measured[0] * left.items), round(measured[1] * left.items))
        else:
            expected = Usage(
                math.ceil(prompt / BYTES_PER_TOKEN),
                left.requests * min(OUTPUT_FLOOR[stage], role.max_tokens),
            )
        worst = Usage(
            max(worst_in, expected.input_tokens),
            max(left.requests * role.max_tokens, expected.output_tokens),
        )
        estimates.append(
            StageEstimate(
                stage=stage,
                model=role.model,
                items=left.items,
                requests=left.requests,
                expected=expected,
                worst=worst,
                measured=0 if measured is None else measured[2],
                planned=left.planned,
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
    """`estimate: answers: 1,200 to do (1,200 requests; 200 present, 1,000 planned); tokens
    about 240,000 in, 120,000 out (no answers measured yet: at least 100 out each);
    $0.48-$39.56 ($0.24-$19.78 batch)`."""
    line = (
        f"estimate: {estimate.stage}: {estimate.items:,} to do ({_requests(estimate.requests)}"
        f"{_planned(estimate)}); tokens about {estimate.expected.input_tokens:,} in, "
        f"{estimate.expected.output_tokens:,} out ({basis(estimate)})"
    )
    cost = estimate.cost(price)
    if cost is None:
        return line + f"; cost unknown (no price for {estimate.model})"
    line += f"; {money(cost[0])}-{money(cost[1])}"
    if batch_discount is not None and estimate.stage in BATCH_STAGES:
        batch = estimate.cost(price, batch_discount)
        assert batch is not None
        line += f" ({money(batch[0])}-{money(batch[1])} batch)"
    return line


def basis(estimate: StageEstimate) -> str:
    """What the low end rests on: the project's measure, or the floor of each request."""
    noun = ITEM_NOUN[estimate.stage]
    if estimate.measured:
        plural = "" if estimate.measured == 1 else "s"
        return f"measured over {estimate.measured:,} earlier {noun}{plural}"
    if estimate.requests == 0:
        return "nothing to send"
    floor = estimate.expected.output_tokens // estimate.requests
    return f"no {noun}s measured yet: at least {floor:,} out each"


def _planned(estimate: StageEstimate) -> str:
    if not estimate.planned:
        return ""
    present = estimate.items - estimate.planned
    return f"; {present:,} present, {estimate.planned:,} planned"


def _requests(count: int) -> str:
    return f"{count:,} request" + ("" if count == 1 else "s")
