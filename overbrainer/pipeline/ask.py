"""`ask_list`: ask the generator for a list of strings, re-asking until one parses (§6.5)."""

from __future__ import annotations

import attrs

from overbrainer.llm import InvalidResponse, LlmError, StatusError
from overbrainer.model.finish import FinishReason
from overbrainer.model.usage import Usage
from overbrainer.pipeline.engine import StageRun
from overbrainer.pipeline.listparse import string_array

NO_STRUCTURED = "{error}; retrying without structured output"
CUT_SHORT = "the answer was cut short by the token limit; retrying with a higher limit"
NOT_A_LIST = "the answer is not a list of strings"
GAVE_UP = "no list of strings after all retries"
LIMIT_GROWTH = 4
"""The token limit doubles on a cut-short answer, up to this many times the role's."""
STRUCTURED_REFUSALS = (400, 415, 422)
"""Statuses with which a provider may refuse structured output (then asked without it)."""


@attrs.frozen
class AskedList:
    """The strings the generator gave, with the usage and cost of every attempt summed."""

    items: list[str]
    usage: Usage
    cost: float | None
    estimated: bool = False
    """Some attempt's reply had no usage: its tokens and cost are estimated."""


def add_cost(total: float | None, cost: float | None) -> float | None:
    """`total` plus `cost`, where None is an unknown cost that adds nothing."""
    if cost is None:
        return total
    return cost if total is None else total + cost


async def ask_list(run: StageRun, item_id: str, prompt: str) -> AskedList | None:
    """The generator's list of strings for `prompt` (the only message, no system prompt).

    Up to `max_retries + 1` attempts. The first asks for structured output; a request the
    provider refuses with a client error (400, 415, 422) drops it for the next attempts; any
    other error, a second failure, or a failure on the last attempt is raised as it is, so the
    real cause is reported. An answer that is not a list is asked again, with twice the token
    limit (up to 4× the role's) when it was cut short. Every attempt is a paid request
    (`run.complete`), its usage counted in the stage at once. Raises `InvalidResponse` (not
    fatal) when no attempt gave a list; None when the stage stopped admitting new requests
    (Ctrl-C, a stop, or the spend cap refused the next attempt) or barred a retry.
    """
    assert run.role is not None, "ask_list needs the stage's role"
    base = run.role.role.max_tokens
    limit = base
    structured = True
    usage = Usage()
    cost: float | None = None
    estimated = False
    attempts = run.ctx.settings.pipeline.max_retries + 1
    for attempt in range(attempts):
        if attempt > 0 and not run.admitting():
            return None
        request = run.request(prompt, json_list=structured, max_tokens=limit)
        try:
            paid = await run.complete(request, item_id)
        except LlmError as error:
            refused = (
                isinstance(error, StatusError)
                and error.status in STRUCTURED_REFUSALS
                and not error.stops_stage
            )
            if not (structured and refused) or attempt + 1 == attempts:
                raise
            structured = False
            run.retrying(item_id, NO_STRUCTURED.format(error=error.message))
            continue
        if paid is None:
            return None
        completion = paid.completion
        cost = add_cost(cost, paid.cost)
        usage = usage + paid.usage
        estimated = estimated or paid.estimated
        items = string_array(completion.content)
        if items:
            return AskedList(items, usage, cost, estimated)
        if completion.finish is FinishReason.LENGTH and limit < LIMIT_GROWTH * base:
            limit = min(limit * 2, LIMIT_GROWTH * base)
            run.retrying(item_id, CUT_SHORT)
        else:
            run.retrying(item_id, NOT_A_LIST)
    raise InvalidResponse(GAVE_UP)
