"""`config check --online`: ask each role's provider for its model list and say what works.

One `GET {base}/models` per provider (timeouts of seconds, providers asked at once), then per
role: reachable, key accepted, model listed, price known. Lines name statuses and causes only,
never a key or a provider's text.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs
import httpx2
import trio

from overbrainer.config.secrets import SecretError, resolve_secret
from overbrainer.config.settings import Provider, Role, Settings
from overbrainer.llm.client import MODELS_PATH, ProviderConnection, open_provider
from overbrainer.llm.connect import EMBEDDER
from overbrainer.llm.errors import LlmError, StatusError, TransportError
from overbrainer.llm.pricing import find_price, role_price
from overbrainer.llm.protocols import wire_of
from overbrainer.llm.types import Json
from overbrainer.llm.wire import EMBEDDED_BASE_URL
from overbrainer.model.error_groups import unwrapped
from overbrainer.model.usage import Price

ONLINE_TIMEOUT = 10.0
"""The longest wait for one provider's model list, connection included, in seconds."""
CONNECT_TIMEOUT = 5.0


@attrs.frozen
class Listing:
    """What one provider answered to `GET /models`: the listing, or why there is none."""

    value: Json | None = None
    status: int | None = None
    """The HTTP status of a refused listing."""
    cause: str | None = None
    """Why the provider was not reached (or its key not resolved): a few words."""
    keyed: bool = False
    """Whether a key was sent."""


@attrs.frozen
class RoleCheck:
    """One role's verdict: its line for `config check --online` and whether it can work."""

    name: str
    line: str
    works: bool


def listed_models(listing: Json) -> list[str] | None:
    """The model IDs of a `/models` listing; None when it has no readable list."""
    data = listing.get("data") if isinstance(listing, dict) else None
    entries = data if isinstance(data, list) else listing if isinstance(listing, list) else None
    if entries is None:
        return None
    ids = [entry.get("id") for entry in entries if isinstance(entry, dict)]
    return [found for found in ids if isinstance(found, str)]


def _usd(value: float) -> str:
    # Listed per token, so $0.10 per million arrives as 0.09999999999999999.
    return f"${value:.2f}" if abs(round(value, 2) - value) < 1e-9 else f"${value:.6g}"


def _price(price: Price) -> str:
    rates = f"{_usd(price.input_per_million)} in, {_usd(price.output_per_million)} out"
    return f"{rates} per million tokens"


def judge_role(name: str, role: Role, listing: Listing, spend_cap: bool) -> RoleCheck:
    """The verdict on `role` from its provider's `listing`."""
    head = f"roles.{name} ({role.provider}, {role.model}):"
    if listing.cause is not None:
        return RoleCheck(name, f"{head} {listing.cause}", False)
    if listing.status in (401, 403):
        return RoleCheck(name, f"{head} reachable, key rejected (HTTP {listing.status})", False)
    if listing.status is not None or listing.value is None:
        status = f"HTTP {listing.status}" if listing.status is not None else "not JSON"
        text = f"{head} reachable, no model list ({status}): key and model not checked"
        return RoleCheck(name, text, True)
    key = "key accepted" if listing.keyed else "no key needed"
    ids = listed_models(listing.value)
    if ids is None:
        return RoleCheck(name, f"{head} reachable, {key}, model list unreadable", True)
    if role.model not in ids:
        return RoleCheck(name, f"{head} reachable, {key}, model not listed", False)
    price = find_price(listing.value, role.model)
    if price is not None:
        known = f"price known ({_price(price)})"
    elif (own := role_price(role)) is not None:
        known = f"price from the configuration ({_price(own)})"
    else:
        known = "price unknown"
    needed = spend_cap and name != EMBEDDER and price is None and role_price(role) is None
    if needed:
        known += " (the spend cap needs it)"
    return RoleCheck(name, f"{head} reachable, {key}, model listed, {known}", not needed)


async def list_models(
    name: str,
    provider: Provider,
    env: Mapping[str, str],
    transport: httpx2.AsyncBaseTransport | None = None,
) -> Listing:
    """What `provider` answers to `GET /models` within seconds (never raises for its answer);
    `transport`: the in-process one of an embedded wire, else None for the network."""
    wire = wire_of(provider.protocol)
    api_key: str | None = None
    if provider.api_key is not None and not wire.embedded:
        try:
            api_key = await resolve_secret(provider.api_key, f"providers.{name}.api_key", env)
        except SecretError as error:
            return Listing(cause=error.message)
    base_url = EMBEDDED_BASE_URL if wire.embedded else provider.base_url
    if base_url is None:
        return Listing(cause=f"providers.{name}.base_url is not set")
    keyed = bool(api_key)
    with trio.move_on_after(ONLINE_TIMEOUT):
        try:
            connection = ProviderConnection(
                provider.protocol,
                base_url,
                api_key or None,
                request_timeout=ONLINE_TIMEOUT,
                connect_timeout=CONNECT_TIMEOUT,
                transport=transport,
            )
            async with open_provider(connection) as http:
                return Listing(await http.get(MODELS_PATH), keyed=keyed)
        except StatusError as error:
            return Listing(status=error.status, keyed=keyed)
        except TransportError as error:
            return Listing(cause=f"unreachable ({error.message})")
        except LlmError:
            return Listing(keyed=keyed)
    return Listing(cause=f"unreachable (no answer within {ONLINE_TIMEOUT:g}s)")


async def check_online(settings: Settings, env: Mapping[str, str] | None = None) -> list[RoleCheck]:
    """Each configured role's verdict, in role order; every provider is asked once, at once."""
    environ = os.environ if env is None else env
    roles = settings.roles.all()
    listings: dict[str, Listing] = {}

    async def ask(name: str) -> None:
        provider = settings.providers[name]
        transport = wire_of(provider.protocol).transport(settings, name)
        listings[name] = await list_models(name, provider, environ, transport)

    async with unwrapped(), trio.open_nursery() as nursery:
        for provider_name in dict.fromkeys(role.provider for _, role in roles):
            nursery.start_soon(ask, provider_name)
    spend_cap = settings.pipeline.max_cost_usd is not None
    return [judge_role(n, r, listings[r.provider], spend_cap) for n, r in roles]
