"""`connect_roles`: the configured roles' clients, one HTTP connection per provider."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence

import attrs
import trio

from overbrainer.config.secrets import SecretError, resolve_secret
from overbrainer.config.settings import Provider, Role, Settings
from overbrainer.llm.adaptive import AdaptiveLimiter, OnWait
from overbrainer.llm.client import ProtocolClient, ProviderConnection, open_provider
from overbrainer.llm.dialects import PriceSource
from overbrainer.llm.errors import LlmError
from overbrainer.llm.http import CONNECT_TIMEOUT, HttpClient
from overbrainer.llm.pricing import PriceBook, role_price
from overbrainer.llm.protocols import wire_of
from overbrainer.llm.retry import RetryPolicy
from overbrainer.llm.windows import UNSTATED_WINDOW
from overbrainer.llm.wire import EMBEDDED_BASE_URL
from overbrainer.model.error_groups import unwrapped
from overbrainer.model.errors import EXIT_USAGE, OverbrainerError
from overbrainer.model.usage import Price

EMBEDDER = "embedder"
QUALITY_JUDGE = "quality"
"""The `[quality] judge` role, which lives outside `[roles]`."""
ROLE_NAMES = ("generator", "parent", EMBEDDER, "judge", QUALITY_JUDGE)


def role_key(name: str) -> str:
    """Where role `name` is configured: `roles.<name>`, or `quality.judge`."""
    return "quality.judge" if name == QUALITY_JUDGE else f"roles.{name}"


class SetupError(OverbrainerError):
    """A role's client cannot be set up from the configuration (exit code 2)."""

    exit_code = EXIT_USAGE


@attrs.frozen
class RoleClient:
    """One role's model on its provider's shared connection, with the model's price if known."""

    name: str
    role: Role
    provider: str
    client: ProtocolClient
    price: Price | None = None


def _role(settings: Settings, name: str) -> Role | None:
    if name not in ROLE_NAMES:
        raise ValueError(f"no role named {name!r}")
    if name == QUALITY_JUDGE:
        return settings.quality.judge
    role: Role | None = getattr(settings.roles, name)
    return role


def _provider(settings: Settings, role: Role) -> Provider:
    """The role's provider with a base URL, or the reference's setup error."""
    name = role.provider
    provider = settings.providers.get(name)
    if provider is None:
        raise SetupError(f"unknown provider `{name}`")
    if provider.base_url is None and not wire_of(provider.protocol).embedded:
        raise SetupError(
            f"providers.{name}.base_url is not set "
            f"(set OVERBRAINER_PROVIDERS__{name.upper()}__BASE_URL)"
        )
    return provider


ConcurrencyObserver = Callable[[str, int, int, str], None]
"""Told `provider/model`, the old limit, the new one and why, at each adaptive change."""


def _limiter(
    settings: Settings,
    limiters: dict[tuple[str, str], AdaptiveLimiter],
    role: Role,
    provider: Provider,
    on_concurrency: ConcurrencyObserver | None,
    on_wait: OnWait | None,
) -> AdaptiveLimiter | None:
    """The shared limiter of the role's (provider, model); None when `adaptive` is off."""
    pipeline = settings.pipeline
    if not pipeline.adaptive:
        return None
    key = (role.provider, role.model)
    if key not in limiters:
        name = f"{role.provider}/{role.model}"
        report = None
        if on_concurrency is not None:
            observer = on_concurrency

            def report(old: int, new: int, reason: str) -> None:
                observer(name, old, new, reason)

        limiters[key] = AdaptiveLimiter(
            name,
            pipeline.concurrency,
            decrease=pipeline.adaptive_decrease,
            pause=pipeline.adaptive_pause_secs,
            window=pipeline.adaptive_window_secs
            or provider.spec.unstated_reset_secs
            or UNSTATED_WINDOW,
            on_change=report,
            on_wait=on_wait,
        )
    return limiters[key]


def _wrap(role_name: str, error: OverbrainerError) -> SetupError:
    if role_name == EMBEDDER:
        return SetupError(f"cannot set up the embedder: {error.message}")
    return error if isinstance(error, SetupError) else SetupError(error.message)


async def _open(
    stack: contextlib.AsyncExitStack,
    settings: Settings,
    name: str,
    provider: Provider,
    env: Mapping[str, str],
) -> HttpClient:
    """Resolve the provider's key (only now, lazily) and open its connection."""
    request_timeout = float(settings.pipeline.request_timeout_secs)
    wire = wire_of(provider.protocol)
    if wire.embedded:
        embedded = ProviderConnection(
            provider.protocol,
            EMBEDDED_BASE_URL,
            request_timeout=request_timeout,
            transport=wire.transport(settings, name),
        )
        return await stack.enter_async_context(open_provider(embedded))
    api_key = None
    if (key := provider.key) is not None:
        try:
            api_key = await resolve_secret(key, f"providers.{name}.api_key", env)
        except SecretError as error:
            raise SetupError(error.message) from None
    assert provider.base_url is not None
    try:
        connection = ProviderConnection(
            provider.protocol,
            provider.base_url,
            api_key,
            request_timeout=request_timeout,
            connect_timeout=CONNECT_TIMEOUT,
            provider=name,
        )
        return await stack.enter_async_context(open_provider(connection))
    except LlmError as error:
        raise SetupError(f"cannot build the client for provider `{name}`: {error}") from None


@contextlib.asynccontextmanager
async def connect_roles(
    settings: Settings,
    names: Sequence[str],
    env: Mapping[str, str] | None = None,
    prices: PriceBook | None = None,
    on_concurrency: ConcurrencyObserver | None = None,
    on_wait: OnWait | None = None,
) -> AsyncIterator[dict[str, RoleClient]]:
    """Connect each named, configured role; providers' connections close on exit.

    An unset optional role (embedder, judge) is left out. Each provider gets one pooled
    connection shared by its roles; its key is resolved here, not before. Every role but the
    embedder has its price looked up in `prices` (one listing per provider), or only in the role
    where the provider's dialect lists no prices. An embedded
    protocol's (`stub`) connection runs over its in-process transport, not the network.
    With `[pipeline] adaptive`, roles on the same provider and model share one adaptive
    limiter, whose changes go to `on_concurrency` and whose pauses for the provider's rate
    limit go to `on_wait`.
    """
    environ = os.environ if env is None else env
    retry = RetryPolicy(max_retries=settings.pipeline.max_retries)
    async with contextlib.AsyncExitStack() as stack:
        connections: dict[str, HttpClient] = {}
        clients: dict[str, tuple[Role, ProtocolClient]] = {}
        limiters: dict[tuple[str, str], AdaptiveLimiter] = {}
        for name in names:
            role = _role(settings, name)
            if role is None:
                continue
            try:
                provider = _provider(settings, role)
                if role.provider not in connections:
                    connections[role.provider] = await _open(
                        stack, settings, role.provider, provider, environ
                    )
            except OverbrainerError as error:
                raise _wrap(name, error) from None
            http = connections[role.provider]
            limiter = _limiter(settings, limiters, role, provider, on_concurrency, on_wait)
            clients[name] = (
                role,
                ProtocolClient(
                    http,
                    provider.protocol,
                    role.model,
                    retry=retry,
                    limiter=limiter,
                    dialect=provider.spec,
                ),
            )
        found: dict[str, Price | None] = {}
        if prices is not None:

            async def look_up(name: str, role: Role, client: ProtocolClient) -> None:
                if client.dialect.prices is PriceSource.ROLE:  # its listing states no prices
                    found[name] = role_price(role)
                else:
                    found[name] = await prices.price_for(role.provider, client, role)

            async with unwrapped(), trio.open_nursery() as nursery:
                for name, (role, client) in clients.items():
                    if name != EMBEDDER:
                        nursery.start_soon(look_up, name, role, client)
        yield {
            name: RoleClient(name, role, role.provider, client, found.get(name))
            for name, (role, client) in clients.items()
        }
