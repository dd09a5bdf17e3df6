"""What the wizard's answers would cost, and what the provider's model list says of them.

The provider's `GET /models` is asked as `config check --online` asks it, once the provider
and key are known, in the background and bounded. The summary's estimate is the pipeline's own
`estimate_stages` on the settings the answers make, priced from that list as `run` prices it
(`find_price`). Nothing here ever waits on the provider: no answer yet, or none, is shown.
"""

from __future__ import annotations

import difflib
import logging
import math
import os
from collections.abc import Mapping, Sequence
from decimal import ROUND_CEILING, Decimal
from pathlib import Path

import attrs
import trio

from overbrainer.config.secrets import Secret
from overbrainer.config.settings import Protocol, Provider
from overbrainer.llm import Listing, find_price, list_models, listed_models
from overbrainer.model import redact
from overbrainer.model.errors import OverbrainerError
from overbrainer.model.usage import Price
from overbrainer.pipeline.context import load_templates, stage_role_name
from overbrainer.pipeline.estimate import PAID_STAGES, StageEstimate, estimate_stages, money
from overbrainer.project.directory import Project
from overbrainer.ui.tui.wizard_files import Answers, settings_of

log = logging.getLogger(__name__)

LISTING_LIMIT = 20.0
"""The longest the wizard waits for a model list, a `vault:` key's lookup included."""
CAP_PROBLEM = "the spend cap is a positive number of dollars, or empty for no cap"


@attrs.frozen
class ProviderAsk:
    """What the model list is asked with: the provider's name, protocol, base URL and key."""

    name: str
    protocol: str
    base_url: str
    api_key: str = attrs.field(default="", repr=False)


@attrs.frozen
class Estimate:
    """The paid stages' estimate for the answers, or why there is none."""

    stages: tuple[StageEstimate, ...] = ()
    problem: str = ""


async def fetch_listing(ask: ProviderAsk) -> Listing:
    """The provider's answer to `GET /models` within `LISTING_LIMIT` seconds; never raises."""
    try:
        protocol = Protocol(ask.protocol)
    except ValueError:
        return Listing(cause=f"the protocol {ask.protocol!r} is unknown")
    key = Secret(ask.api_key) if ask.api_key.strip() else None
    if key is not None and not key.is_reference:
        redact.register(ask.api_key)
    provider = Provider(protocol, ask.base_url, key)
    with trio.move_on_after(LISTING_LIMIT):
        try:
            return await list_models(ask.name, provider, dict(os.environ))
        except Exception as error:  # an odd URL or reply must not end the wizard
            log.warning("the model list of %s was not read: %s", ask.name, type(error).__name__)
            return Listing(cause=f"not asked ({type(error).__name__})")
    return Listing(cause=f"unreachable (no answer within {LISTING_LIMIT:g}s)")


def estimate_answers(root: Path, answers: Answers) -> Estimate:
    """The paid stages' estimate for `answers` in `root` (blocking: loads and reads files)."""
    try:
        settings = settings_of(answers)
        project = Project(root)
        templates = load_templates(project)
        stages = estimate_stages(project, settings, PAID_STAGES, templates, settings.topics)
    except OverbrainerError as error:
        return Estimate(problem=error.message)
    except OSError as error:  # data files that cannot be read: an estimate is not worth a crash
        return Estimate(problem=f"cannot read {root}: {error.strerror or error}")
    return Estimate(tuple(stages))


def unreadable(listing: Listing, provider: str) -> str | None:
    """Why `listing` names no models (a clause naming `provider`), or None when it does."""
    if listing.cause is not None:
        cause = listing.cause
        return f"{provider} is {cause}" if cause.startswith("unreachable") else cause
    if listing.key_refused:
        return f"{provider} refused the key (HTTP {listing.status})"
    if listing.status is not None:
        return f"{provider} gave no model list (HTTP {listing.status})"
    ids = None if listing.value is None else listed_models(listing.value)
    if ids is None:
        return f"{provider}'s model list is unreadable"
    if not ids:  # says nothing of any name: no reason to flag them all
        return f"{provider}'s model list is empty"
    return None


def listing_note(listing: Listing | None, provider: str) -> str:
    """One line on the model list: awaited, how many models it has, or why none."""
    if listing is None:
        return f"checking {provider}'s model list…"
    why = unreadable(listing, provider)
    if why is not None:
        return f"model names not checked: {why}"
    ids = listed_models(listing.value) or []
    return f"{provider} lists {len(ids):,} models"


def unlisted(listing: Listing | None, names: Sequence[str]) -> list[str]:
    """The names (once each) a readable `listing` lacks; none when it is awaited or unread."""
    if listing is None or unreadable(listing, "") is not None:
        return []
    ids = set(listed_models(listing.value) or [])
    return [name for name in dict.fromkeys(names) if name and name not in ids]


def flag(listing: Listing | None, provider: str, name: str) -> str:
    """`model NAME is not in PROVIDER's list`, with the nearest listed name when one is close."""
    ids = (listed_models(listing.value) if listing is not None else None) or []
    close = difflib.get_close_matches(name, ids, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"model {name} is not in {provider}'s list{hint}"


def _price(listing: Listing, stage: StageEstimate, models: Mapping[str, str]) -> Price | None:
    """The listed price of the model that runs `stage` (`models`: each role's model)."""
    model = models.get(stage_role_name(stage.stage) or "", "")
    return find_price(listing.value, model) if listing.value is not None else None


def _cost_problem(
    estimate: Estimate, listing: Listing | None, provider: str, models: Mapping[str, str]
) -> str | None:
    """Why the cost is unknown ("" while the list is awaited), or None when it is known."""
    if listing is None:
        return ""
    why = unreadable(listing, provider)
    if why is not None:
        return why
    for stage in estimate.stages:
        if _price(listing, stage, models) is None:
            model = models.get(stage_role_name(stage.stage) or "", "")
            return f"{provider} lists no price for {model}"
    return None


def cost_range(
    estimate: Estimate | None, listing: Listing | None, models: Mapping[str, str]
) -> tuple[float, float] | None:
    """The low and high cost of every paid stage in USD, or None when it is not known."""
    if estimate is None or estimate.problem or listing is None:
        return None
    low = high = 0.0
    for stage in estimate.stages:
        cost = stage.cost(_price(listing, stage, models))
        if cost is None:
            return None
        low, high = low + cost[0], high + cost[1]
    return low, high


def estimate_lines(
    estimate: Estimate | None,
    listing: Listing | None,
    provider: str,
    models: Mapping[str, str],
) -> list[str]:
    """The summary's estimate: per paid stage its tokens (output: expected-at most) and cost,
    then the total, or why the cost is unknown. Short lines: the summary fits 80x24."""
    if estimate is None:
        return ["estimate  working it out…"]
    if estimate.problem:
        return [f"estimate  none: {estimate.problem}"]
    problem = _cost_problem(estimate, listing, provider, models)
    out = []
    for stage in estimate.stages:
        line = (
            f"{stage.stage}: {stage.expected.input_tokens:,} in + "
            f"{stage.expected.output_tokens:,}-{stage.worst.output_tokens:,} out tokens"
        )
        cost = None if listing is None else stage.cost(_price(listing, stage, models))
        if cost is not None:
            line += f", {money(cost[0])}-{money(cost[1])}"
        out.append(line)
    total = cost_range(estimate, listing, models)
    if total is not None:
        out.append(f"total {money(total[0])}-{money(total[1])} (high: every reply at max_tokens)")
    elif problem == "":
        out.append(f"cost: asking {provider} for prices…")
    else:
        out.append(f"cost unknown: {problem}")
    return [("estimate  " if i == 0 else " " * 10) + line for i, line in enumerate(out)]


def rounded_cap(high: float) -> str:
    """`high` rounded up to two significant figures (a cent at least): the cap's default."""
    if not (math.isfinite(high) and high > 0):
        return ""
    value = Decimal(repr(high))
    step = Decimal(1).scaleb(value.adjusted() - 1)
    cap = max((value / step).to_integral_value(rounding=ROUND_CEILING) * step, Decimal("0.01"))
    return f"{cap.normalize():f}"


def parse_cap(text: str) -> float | None:
    """The spend cap typed (`12`, `$12.50`, `1,000`); None when empty; ValueError otherwise."""
    cleaned = text.strip().removeprefix("$").replace(",", "").strip()
    if not cleaned:
        return None
    value = float(cleaned)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(CAP_PROBLEM)
    return value
