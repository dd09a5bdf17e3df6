"""`overbrainer estimate [STAGE...]`: what the paid stages still have to do and may cost."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import trio

from overbrainer.config.settings import Role, Settings
from overbrainer.config.validate import batch_discount
from overbrainer.events.frontend import Frontend
from overbrainer.events.types import Stage
from overbrainer.flows.setup import CommandOptions, open_command
from overbrainer.llm import PriceBook, connect_roles, role_price
from overbrainer.model.errors import OverbrainerError
from overbrainer.model.json_values import JsonValue
from overbrainer.model.json_values import money as money_text
from overbrainer.model.usage import Price
from overbrainer.pipeline.engine import load_templates, stage_role_name
from overbrainer.pipeline.estimate import (
    BATCH_STAGES,
    PAID_STAGES,
    StageEstimate,
    estimate_line,
    estimate_stages,
    money,
)
from overbrainer.pipeline.forces import unfinished_forces

log = logging.getLogger(__name__)

PRICE_LOOKUP_SECS = 15.0
"""The longest the providers' model listings may take before the estimate goes without."""


def _configured_role(settings: Settings, name: str) -> Role | None:
    """The role `name` as configured: `[roles.*]`, or `[quality] judge` for `quality`."""
    if name == "quality":
        return settings.quality.judge
    role: Role | None = getattr(settings.roles, name)
    return role


async def _prices(
    settings: Settings, env: Mapping[str, str], stages: Sequence[Stage]
) -> dict[Stage, Price | None]:
    """Each stage's model price: the provider's listing where it can be read, else the role's
    own `price_in`/`price_out`."""
    names = sorted({name for stage in stages if (name := stage_role_name(stage)) is not None})
    found: dict[str, Price | None] = {}
    try:
        with trio.move_on_after(PRICE_LOOKUP_SECS):
            async with connect_roles(settings, names, env, PriceBook()) as roles:
                found = {name: role.price for name, role in roles.items()}
    except OverbrainerError as error:
        log.warning("prices not looked up (%s): using the configured ones", error.message)
    prices: dict[Stage, Price | None] = {}
    for stage in stages:
        name = stage_role_name(stage)
        role = None if name is None else _configured_role(settings, name)
        prices[stage] = found.get(name or "") or (None if role is None else role_price(role))
    return prices


async def estimate_flow(options: CommandOptions, front: Frontend, stages: Sequence[Stage]) -> None:
    """One line per paid stage, then the total; reads only (no lock, no request is paid)."""
    chosen = [stage for stage in (stages or PAID_STAGES) if stage in PAID_STAGES]
    async with open_command(options, front, shared=True) as command:
        settings = command.config.settings
        templates = await trio.to_thread.run_sync(load_templates, command.project)
        estimates = await trio.to_thread.run_sync(
            estimate_stages, command.project, settings, chosen, templates, settings.topics
        )
        names = frozenset(topic.name for topic in settings.topics)
        forces = await trio.to_thread.run_sync(unfinished_forces, command.project, chosen, names)
        prices = await _prices(settings, command.config.env, chosen)
        low = high = 0.0
        unpriced: list[str] = []
        discount = batch_discount(settings)
        for estimate in estimates:
            price = prices.get(estimate.stage)
            front.line(estimate_line(estimate, price, discount))
            cost = estimate.cost(price)
            if cost is None:
                unpriced.append(estimate.model)
            else:
                low, high = low + cost[0], high + cost[1]
        for force in forces:
            front.line(f"estimate: {force}")
        front.line(total_line(low, high, len(estimates), unpriced))
        front.result("stages", [stage_json(e, prices.get(e.stage), discount) for e in estimates])
        front.result("notes", list(forces))
        front.result("total", total_json(low, high, len(estimates), unpriced))


def stage_json(
    estimate: StageEstimate, price: Price | None, discount: float | None
) -> dict[str, JsonValue]:
    """A stage of `estimate --json`: the facts of its line, costs null when unpriced and the
    batch ones null where no batch API runs the stage."""
    cost = estimate.cost(price)
    batch = estimate.cost(price, discount) if discount is not None else None
    if estimate.stage not in BATCH_STAGES:
        batch = None
    return {
        "stage": estimate.stage.value,
        "model": estimate.model,
        "items": estimate.items,
        "present": estimate.items - estimate.planned,
        "planned": estimate.planned,
        "requests": estimate.requests,
        "measured": estimate.measured,
        "low": {
            "input_tokens": estimate.expected.input_tokens,
            "output_tokens": estimate.expected.output_tokens,
            "cost": None if cost is None else money_text(cost[0]),
            "batch_cost": None if batch is None else money_text(batch[0]),
        },
        "high": {
            "input_tokens": estimate.worst.input_tokens,
            "output_tokens": estimate.worst.output_tokens,
            "cost": None if cost is None else money_text(cost[1]),
            "batch_cost": None if batch is None else money_text(batch[1]),
        },
    }


def total_json(
    low: float, high: float, stages: int, unpriced: Sequence[str]
) -> dict[str, JsonValue]:
    """The total of `estimate --json`: over the priced stages; null when none is priced."""
    known = not unpriced or len(unpriced) < stages
    return {
        "cost_low": money_text(low) if known else None,
        "cost_high": money_text(high) if known else None,
        "unpriced_models": list(dict.fromkeys(unpriced)),
    }


def total_line(low: float, high: float, stages: int, unpriced: Sequence[str]) -> str:
    """`estimate: total $0.52-$41.20`; a total of nothing priced says so rather than $0."""
    if not unpriced:
        return f"estimate: total {money(low)}-{money(high)}"
    models = ", ".join(dict.fromkeys(unpriced))
    plural = "s" if len(set(unpriced)) > 1 else ""
    no_prices = f"no price{plural} for {models}"
    if len(unpriced) == stages:
        return f"estimate: total cost unknown ({no_prices})"
    return (
        f"estimate: total {money(low)}-{money(high)} for the stages with a known price "
        f"({no_prices})"
    )
