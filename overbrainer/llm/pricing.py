"""Model prices from a provider's `/models` listing, read once per provider per command."""

from __future__ import annotations

import logging
import math
import re
from typing import Protocol as TypingProtocol

import attrs
import trio

from overbrainer.config.settings import Role
from overbrainer.llm.types import Json
from overbrainer.model.usage import Price

log = logging.getLogger(__name__)

LISTING_TIMEOUT = 10.0
"""The longest wait for a provider's model listing, in seconds."""

PER_MILLION = 1_000_000.0
_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


class ListsModels(TypingProtocol):
    """What a price lookup needs of a client: the raw model listing."""

    async def models(self) -> Json:
        """The provider's model listing, decoded."""
        ...


def _rate(pricing: dict[str, Json], field: str, per_million_unit: bool) -> float | None:
    """One field in USD per million: a per-token decimal string, or a per-million number."""
    value = pricing.get(field)
    if isinstance(value, str):
        text = value.strip()
        if not _DECIMAL.fullmatch(text):
            return None
        rate = float(text) * PER_MILLION
    elif isinstance(value, int | float) and not isinstance(value, bool) and per_million_unit:
        rate = float(value)
    else:
        return None
    return rate if math.isfinite(rate) and rate >= 0 else None


def per_million_price(listing: Json, model: str) -> tuple[float, float] | None:
    """USD per million input and output tokens of `model` in a listing, if it states both.

    OpenRouter lists per-token decimal strings; NanoGPT lists numbers per million tokens
    with `pricing.unit == "per_million_tokens"`. A negative price (a variable-price router)
    or anything else means unknown.
    """
    data = listing.get("data") if isinstance(listing, dict) else None
    entries = data if isinstance(data, list) else listing if isinstance(listing, list) else None
    if entries is None:
        return None
    entry = next((e for e in entries if isinstance(e, dict) and e.get("id") == model), None)
    if entry is None:
        return None
    pricing = entry.get("pricing")
    if not isinstance(pricing, dict):
        return None
    per_million_unit = pricing.get("unit") == "per_million_tokens"
    prompt = _rate(pricing, "prompt", per_million_unit)
    completion = _rate(pricing, "completion", per_million_unit)
    if prompt is None or completion is None:
        return None
    return prompt, completion


def find_price(listing: Json, model: str) -> Price | None:
    """The `Price` of `model` in a listing, or None when unknown."""
    found = per_million_price(listing, model)
    if found is None:
        return None
    return Price(*found)


def role_price(role: Role) -> Price | None:
    """The role's own `price_in` / `price_out` (USD per million), when both are set."""
    if role.price_in is None or role.price_out is None:
        return None
    return Price(role.price_in, role.price_out)


@attrs.define
class _Listing:
    fetched: trio.Event = attrs.field(factory=trio.Event)
    value: Json | None = None


class PriceBook:
    """Prices for one command: each provider's listing is read at most once, failures included."""

    def __init__(self, timeout: float = LISTING_TIMEOUT) -> None:
        self.timeout = timeout
        self._listings: dict[str, _Listing] = {}

    async def listing(self, provider_name: str, client: ListsModels) -> Json | None:
        """The provider's listing, fetched on first use; None when it failed or was too slow."""
        entry = self._listings.get(provider_name)
        if entry is not None:
            await entry.fetched.wait()
            return entry.value
        entry = self._listings[provider_name] = _Listing()
        try:
            entry.value = await self._fetch(client)
        finally:
            entry.fetched.set()
        return entry.value

    async def _fetch(self, client: ListsModels) -> Json | None:
        with trio.move_on_after(self.timeout):
            try:
                return await client.models()
            except Exception as error:  # a price lookup never fails the command
                log.warning("cannot read model prices (%s); showing tokens only", error)
                return None
        log.warning(
            "model prices not received within %ss; showing tokens only", f"{self.timeout:g}"
        )
        return None

    async def price_for(self, provider_name: str, client: ListsModels, role: Role) -> Price | None:
        """The price of `role.model`: the listing's, else the role's own, else None (logged)."""
        listing = await self.listing(provider_name, client)
        price = find_price(listing, role.model) if listing is not None else None
        if price is not None:
            return price
        configured = role_price(role)
        if configured is not None:
            log.debug("using the configured price of model %s", role.model)
            return configured
        if listing is not None:
            log.info("no price listed for model %s; showing tokens only", role.model)
        return None
