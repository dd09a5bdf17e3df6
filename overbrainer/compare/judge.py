"""The judge: each question's two answers shown to an LLM, verdicts appended as they come (§A.8)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs
import trio

from overbrainer.compare.answers import ChildAnswer
from overbrainer.compare.judge_cost import CapRefused, JudgeSpend
from overbrainer.compare.reasoning import strip_reasoning
from overbrainer.compare.setup import CompareSetup
from overbrainer.compare.verdicts import (
    Verdict,
    VerdictLine,
    agreed,
    child_first,
    parse_reply,
    verdict_of,
)
from overbrainer.config.settings import Role
from overbrainer.events.bus import EventBus
from overbrainer.events.types import Judged
from overbrainer.llm import CompletionRequest, LlmError, ProtocolClient
from overbrainer.model.error_groups import meaningful_error
from overbrainer.model.errors import WorkFailed
from overbrainer.model.usage import Price
from overbrainer.pipeline.judge_watch import UnscoredStreak
from overbrainer.pipeline.spend import SpendCapReached
from overbrainer.project.templates import Template
from overbrainer.storage import open_file_appender, read_records

log = logging.getLogger(__name__)

ASKS = 2
"""Asks per order before a reply that never parses is recorded `unparsed`."""


FIX = "use a judge model that follows the compare prompt's format, or fix that prompt"
"""The end of the line that stops a judge which never gives a parsable verdict."""


def judge_name(judge: Judge) -> str:
    """The judge's role as the stop line names it."""
    return "`[roles.parent]` (judging)" if judge.is_parent else "`[roles.judge]`"


class JudgeFailed(WorkFailed):
    """A judge request failed after its retries; the verdicts so far are kept."""


def resume_hint(compare_id: str) -> str:
    """What the user runs to finish judging."""
    return f"the verdicts so far are kept; resume with `overbrainer compare --rejudge {compare_id}`"


def capped(spend: JudgeSpend, compare_id: str) -> SpendCapReached:
    """The error of a judging the spend cap stopped, with the resume hint."""
    cap = spend.cap
    assert cap.limit is not None and cap.refused is not None
    return SpendCapReached(cap.limit, cap.spent, cap.refused, hint=resume_hint(compare_id))


@attrs.frozen
class Judge:
    """The judging model and its prompt: a role on its provider's client."""

    provider: str
    role: Role
    client: ProtocolClient
    template: Template
    template_source: str
    is_parent: bool
    price: Price | None = None
    """The judge model's price, when known: its requests are held to the spend cap with it."""

    @property
    def label(self) -> str:
        """`provider/model`, as the report shows it."""
        return f"{self.provider}/{self.role.model}"


def read_verdicts(path: Path) -> dict[str, VerdictLine]:
    """The verdicts already in a file, by question ID (blocking)."""
    if not path.exists():
        return {}
    found: dict[str, VerdictLine] = {}
    for line in read_records(path, _parse_or_none):
        if line is not None:
            found[line.id] = line
    return found


def _parse_or_none(text: str) -> VerdictLine | None:
    try:
        return VerdictLine.from_json(text)
    except (ValueError, KeyError):
        return None


async def _ask(
    judge: Judge, spend: JudgeSpend, prompt: str, question_id: str
) -> tuple[str, str] | str:
    """The judge's choice and reason for one order; its last reply when none parsed in two
    asks.

    CapRefused when the spend cap refuses an ask: the question is left unjudged.
    """
    role = judge.role
    request = CompletionRequest(
        prompt,
        max_tokens=role.max_tokens,
        temperature=role.temperature,
        reasoning=role.reasoning,
        effort=role.reasoning_effort,
        thinking_budget=role.thinking_budget,
    )
    reply = ""
    for ask in range(ASKS):
        try:
            completion = await spend.complete(judge.client, request)
        except LlmError as error:
            raise JudgeFailed(f"the judge failed on question {question_id}: {error}") from None
        reply = completion.content
        parsed = parse_reply(reply)
        if parsed is not None:
            return parsed.choice, parsed.reason
        log.debug("compare: the judge's reply %d on %s did not parse", ask + 1, question_id)
    return reply


def no_base_answer(answer: ChildAnswer | None) -> str:
    """The reason of a win the base model gave away: it has no usable answer."""
    error = None if answer is None else answer.error
    return "the base model gave no answer" + (f": {error}" if error else "")


async def judge_one(
    judge: Judge,
    setup: CompareSetup,
    index: int,
    answer: ChildAnswer | None,
    both_orders: bool,
    spend: JudgeSpend,
    streak: UnscoredStreak | None = None,
    base: Mapping[str, ChildAnswer] | None = None,
) -> VerdictLine:
    """The verdict on one question, the child against the parent's answer, or against the
    base model's when `base` (its answers by ID) is given: `error` without a usable child
    answer, a win when the base has none, no judge call then.

    CapRefused when the spend cap refuses one of its requests (`spend`: the command's). A
    question judged with no reply parsed lengthens `streak`, any other ends it.
    """
    question = setup.questions[index]
    first = child_first(question.id, setup.seed)
    if answer is None or answer.is_error:
        return VerdictLine(question.id, Verdict.ERROR, None, first)
    other = question.parent
    if base is not None:
        theirs = base.get(question.id)
        if theirs is None or theirs.is_error:
            return VerdictLine(question.id, Verdict.WIN, no_base_answer(theirs), first)
        other = strip_reasoning(theirs.answer or "")
    child = strip_reasoning(answer.answer or "")
    verdicts: list[Verdict] = []
    reasons: list[str] = []
    unparsed: list[str] = []
    for child_is_a in (first, not first) if both_orders else (first,):
        a, b = (child, other) if child_is_a else (other, child)
        prompt = judge.template.render(question=question.question, answer_a=a, answer_b=b)
        reply = await _ask(judge, spend, prompt, question.id)
        if isinstance(reply, str):
            verdicts.append(Verdict.UNPARSED)
            unparsed.append(reply)
            continue
        verdicts.append(verdict_of(reply[0], child_is_a))
        reasons.append(reply[1])
    if streak is not None:
        if len(unparsed) == len(verdicts):
            streak.unscored(unparsed[-1])
        else:
            streak.scored()
    verdict = verdicts[0] if len(verdicts) == 1 else agreed(verdicts[0], verdicts[1])
    reason = next((r for r in reasons if r), None)
    return VerdictLine(question.id, verdict, reason, first)


@attrs.frozen
class Judging:
    """How `judge_all` judges: which judge, through which spend, on which bus, how many at once."""

    judge: Judge
    spend: JudgeSpend
    bus: EventBus
    concurrency: int
    both_orders: bool
    """Each question asked in both orders, the verdict kept when they agree."""
    admitting: Callable[[], bool] = lambda: True
    """False once no further question may start (the ones in flight finish)."""
    base: Mapping[str, ChildAnswer] | None = None
    """The base model's answers by ID: the child is judged against them, not the parent."""
    done_elsewhere: int = 0
    """Verdicts of the compare's other judging, counted in the `Judged` events' `done`."""
    total: int | None = None
    """The `Judged` events' `total` (None: the setup's questions)."""


async def judge_all(
    judging: Judging,
    setup: CompareSetup,
    answers: Sequence[ChildAnswer],
    verdicts_path: Path,
) -> list[VerdictLine] | None:
    """Judge every question without a verdict in `verdicts_path`, `concurrency` at a time.

    Each verdict is appended as soon as it comes, then a `Judged` event. Returns the verdicts
    of every setup question, in setup order; None when `admitting()` turned false before every
    question was taken (the questions in flight are still judged and kept). Cancelling keeps
    what was appended. Every judge request goes through `spend` (its cap, its counts); once
    the cap refuses one, no question starts and SpendCapReached ends the judging, the verdicts
    so far kept.
    """
    judge, spend, bus = judging.judge, judging.spend, judging.bus
    compare_id = setup.compare
    streak = UnscoredStreak(judge_name(judge), judge.role.model, "verdict", FIX)
    known = await trio.to_thread.run_sync(read_verdicts, verdicts_path)
    ids = {q.id for q in setup.questions}
    done = {k: v for k, v in known.items() if k in ids}
    total = len(setup.questions) if judging.total is None else judging.total
    by_id = {a.id: a for a in answers}
    todo = [i for i, q in enumerate(setup.questions) if q.id not in done]
    spend.count(skipped=len(done))
    appender = await trio.to_thread.run_sync(open_file_appender, verdicts_path)
    pending = iter(todo)
    try:

        async def worker() -> None:
            # Workers take questions in setup order, so a resume is predictable.
            for index in pending:
                if not judging.admitting() or spend.cap.reached or streak.stop is not None:
                    return
                question_id = setup.questions[index].id
                answer = by_id.get(question_id)
                try:
                    line = await judge_one(
                        judge,
                        setup,
                        index,
                        answer,
                        judging.both_orders,
                        spend,
                        streak,
                        judging.base,
                    )
                except CapRefused:
                    return
                except JudgeFailed:
                    spend.count(failed=1)
                    raise
                await trio.to_thread.run_sync(appender.append, line.to_json())
                done[question_id] = line
                spend.count(done=1)
                done_now = judging.done_elsewhere + len(done)
                bus.publish(Judged(compare_id, done_now, total, spend.spent()))

        try:
            async with trio.open_nursery() as nursery:
                for _ in range(max(1, min(judging.concurrency, len(todo)))):
                    nursery.start_soon(worker)
        except BaseExceptionGroup as group:
            error = meaningful_error(group)
            if error is None:
                raise
            if isinstance(error, JudgeFailed):
                error = JudgeFailed(f"{error.message}; {resume_hint(compare_id)}")
            raise error from None
    finally:
        with trio.move_on_after(5, shield=True):
            await trio.to_thread.run_sync(appender.close)
    if streak.stop is not None:
        raise streak.stop  # the questions in flight were judged and kept first
    if any(q.id not in done for q in setup.questions):
        if spend.cap.reached:
            raise capped(spend, compare_id)
        return None
    return [done[q.id] for q in setup.questions]
