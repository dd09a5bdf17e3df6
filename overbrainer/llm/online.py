"""`config check --online`: ask each role's provider for its model list and say what works.

One `GET {base}/models` per provider (timeouts of seconds, providers asked at once), then per
role: reachable, key accepted, model listed, price known. A provider that gives no list (404,
a 400 not about the key, 5xx, not JSON) gets one one-token probe per model its roles use (see
llm.probe). Lines name statuses and causes only, never a key or a provider's text.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs
import httpx2
import trio

from overbrainer.config.secrets import SecretError, resolve_secret
from overbrainer.config.settings import Provider, Role, Settings
from overbrainer.llm.client import ProviderConnection, open_provider
from overbrainer.llm.connect import EMBEDDER, QUALITY_JUDGE, role_key
from overbrainer.llm.errors import LlmError, StatusError, TransportError
from overbrainer.llm.pricing import find_price, role_price
from overbrainer.llm.probe import Probe, probe_roles
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
    names_key: bool = False
    """Whether the refusal's text names the key (a 400 that refuses it)."""

    @property
    def key_refused(self) -> bool:
        """Whether the answer refused the key: 401, 403, or a 400 that names the key."""
        return self.status in (401, 403) or (self.status == 400 and self.names_key)

    @property
    def unlisted(self) -> bool:
        """Whether the provider answered without a list that says if it takes the key."""
        if self.cause is not None or self.key_refused:
            return False
        return self.value is None or listed_models(self.value) is None


SentProbe = tuple[str, Probe]
"""A one-token probe's result and the name of the role it was sent for."""


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


def _known_price(name: str, role: Role, listed: Price | None, spend_cap: bool) -> tuple[str, bool]:
    """The price words of a role's line, and whether the role can work without more."""
    if listed is not None:
        known = f"price known ({_price(listed)})"
    elif (own := role_price(role)) is not None:
        known = f"price from the configuration ({_price(own)})"
    else:
        known = "price unknown"
    needed = spend_cap and name != EMBEDDER and listed is None and role_price(role) is None
    return (known + " (the spend cap needs it)", False) if needed else (known, True)


def _accepted(keyed: bool) -> str:
    return "key accepted" if keyed else "no key needed"


def _refused(keyed: bool) -> str:
    return "key refused" if keyed else "a key is needed (none was sent)"


def _probed(
    name: str, role: Role, head: str, sent: SentProbe, spend_cap: bool, keyed: bool
) -> RoleCheck:
    """The verdict from a one-token probe, after `head` (which says why there was one)."""
    sent_for, probe = sent
    if probe.key_refused:
        text = f"{head}; {_refused(keyed)} (one-token probe: HTTP {probe.status})"
        return RoleCheck(name, text, False)
    if probe.status == 404:
        text = f"{head}; one-token probe: HTTP 404, the model or the base URL is wrong"
        return RoleCheck(name, text, False)
    if probe.status is not None or probe.usage is None:
        why = f"HTTP {probe.status}" if probe.status is not None else probe.cause
        return RoleCheck(name, f"{head}; one-token probe: {why}: key and model not checked", True)
    if not probe.readable:
        text = f"{head}; {_accepted(keyed)}, one-token probe answer unreadable"
        return RoleCheck(name, text, True)
    tokens = f"{probe.usage.input_tokens} tokens in, {probe.usage.output_tokens} out"
    if sent_for != name:  # one probe per provider and model: its tokens are counted once
        tokens = f"the probe of {role_key(sent_for)}"
    known, works = _known_price(name, role, None, spend_cap)
    text = f"{head}; {_accepted(keyed)}, model answered a one-token probe ({tokens}), {known}"
    return RoleCheck(name, text, works)


def judge_role(
    name: str, role: Role, listing: Listing, spend_cap: bool, probe: SentProbe | None = None
) -> RoleCheck:
    """The verdict on `role` from its provider's `listing`, and from its model's one-token
    `probe` (and the role it was sent for) when the listing said nothing of the key."""
    head = f"{role_key(name)} ({role.provider}, {role.model}):"
    if listing.cause is not None:
        return RoleCheck(name, f"{head} {listing.cause}", False)
    if listing.key_refused:
        text = f"{head} reachable, {_refused(listing.keyed)} (HTTP {listing.status})"
        return RoleCheck(name, text, False)
    if listing.status is not None or listing.value is None:
        status = f"HTTP {listing.status}" if listing.status is not None else "not JSON"
        head = f"{head} reachable, no model list ({status})"
        if probe is None:
            return RoleCheck(name, f"{head}: key and model not checked", True)
        return _probed(name, role, head, probe, spend_cap, listing.keyed)
    key = _accepted(listing.keyed)
    ids = listed_models(listing.value)
    if ids is None:
        if probe is None:
            return RoleCheck(name, f"{head} reachable, {key}, model list unreadable", True)
        head = f"{head} reachable, model list unreadable"
        return _probed(name, role, head, probe, spend_cap, listing.keyed)
    if role.model not in ids:
        return RoleCheck(name, f"{head} reachable, {key}, model not listed", False)
    known, works = _known_price(name, role, find_price(listing.value, role.model), spend_cap)
    return RoleCheck(name, f"{head} reachable, {key}, model listed, {known}", works)


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
                return Listing(await http.get(provider.spec.models_path), keyed=keyed)
        except StatusError as error:
            return Listing(status=error.status, keyed=keyed, names_key=error.refuses_key)
        except TransportError as error:
            return Listing(cause=f"unreachable ({error.message})")
        except LlmError:
            return Listing(keyed=keyed)
    return Listing(cause=f"unreachable (no answer within {ONLINE_TIMEOUT:g}s)")


async def check_online(settings: Settings, env: Mapping[str, str] | None = None) -> list[RoleCheck]:
    """Each configured role's verdict, in role order with `[quality] judge` last; every provider
    is asked once, at once.

    Then each model of a provider that gave no list is probed once (one request for the roles
    that share it), all at once."""
    environ = os.environ if env is None else env
    roles = settings.roles.all()
    if settings.quality.judge is not None:
        roles.append((QUALITY_JUDGE, settings.quality.judge))
    listings: dict[str, Listing] = {}

    async def ask(name: str) -> None:
        provider = settings.providers[name]
        transport = wire_of(provider.protocol).transport(settings, name)
        listings[name] = await list_models(name, provider, environ, transport)

    async with unwrapped(), trio.open_nursery() as nursery:
        for provider_name in dict.fromkeys(role.provider for _, role in roles):
            nursery.start_soon(ask, provider_name)
    # The first role of each provider and model stands for the others: one probe each.
    probed: dict[tuple[str, str], str] = {}
    for name, role in roles:
        if listings[role.provider].unlisted:
            probed.setdefault((role.provider, role.model), name)
    probes = await probe_roles(settings, list(probed.values()), environ) if probed else {}
    spend_cap = settings.pipeline.max_cost_usd is not None
    return [
        judge_role(name, role, listings[role.provider], spend_cap, _shared(probes, probed, role))
        for name, role in roles
    ]


def _shared(
    probes: Mapping[str, Probe], probed: Mapping[tuple[str, str], str], role: Role
) -> SentProbe | None:
    """The probe that stands for `role`, with the role it was sent for."""
    sent_for = probed.get((role.provider, role.model))
    probe = None if sent_for is None else probes.get(sent_for)
    return None if sent_for is None or probe is None else (sent_for, probe)
