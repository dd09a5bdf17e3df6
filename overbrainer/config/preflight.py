"""The pre-flight: what would surely make a command fail, found before any request is sent.

It needs no network: an unset base URL, a missing key, a `vault:` reference that cannot be
resolved here (no `VAULT_ADDR`, no token). A provider on a loopback address (a local Ollama,
llama.cpp or vLLM server) needs no key: those servers accept requests without one, and one that
wants a key answers 401, which `config check --online` reports.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx2

from overbrainer.config.errors import ConfigError
from overbrainer.config.report import secrets_of
from overbrainer.config.secrets import unresolvable
from overbrainer.config.settings import Protocol, Provider, Settings


class PreflightError(ConfigError):
    """The configuration loads but cannot work: one problem per line (exit code 2)."""

    @classmethod
    def of(cls, problems: Sequence[str]) -> PreflightError:
        """One problem on one line; several under a heading, one per line."""
        if len(problems) == 1:
            return cls(problems[0], problems)
        lines = "".join(f"\n  {problem}" for problem in problems)
        return cls(f"the configuration cannot work:{lines}", problems)


def is_loopback(url: str) -> bool:
    """Whether `url`'s host is this machine (`localhost`, 127.0.0.0/8, ::1)."""
    try:
        host = httpx2.URL(url).host
    except (httpx2.InvalidURL, ValueError):
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _provider_problems(
    name: str, provider: Provider, users: str, environ: Mapping[str, str], home: Path | None
) -> list[str]:
    if provider.protocol is Protocol.STUB:
        return []
    env_name = f"OVERBRAINER_PROVIDERS__{name.upper()}"
    if provider.base_url is None:
        return [f"providers.{name}.base_url is not set (set {env_name}__BASE_URL); {users}"]
    key = f"providers.{name}.api_key"
    if provider.api_key is None or not provider.api_key.text.strip():
        if is_loopback(provider.base_url):
            return []
        state = "is not set" if provider.api_key is None else "is empty"
        return [f"{key} {state} (set {env_name}__API_KEY); {users}"]
    problem = unresolvable(provider.api_key, key, environ, home)
    return [] if problem is None else [problem]


def role_problems(
    settings: Settings,
    role_names: Sequence[str],
    environ: Mapping[str, str],
    home: Path | None = None,
) -> list[str]:
    """What stops the named roles' providers from working, one line each, provider by provider.

    Blocking (it may read `~/.vault-token`): call it off the event loop.
    """
    users: dict[str, list[str]] = {}
    for name, role in settings.roles.all():
        if name in role_names:
            users.setdefault(role.provider, []).append(f"roles.{name}")
    problems: list[str] = []
    for provider_name, roles in users.items():
        provider = settings.providers[provider_name]
        used_by = f"{' and '.join(roles)} use{'s' if len(roles) == 1 else ''} it"
        problems += _provider_problems(provider_name, provider, used_by, environ, home)
    return problems


def config_problems(
    settings: Settings, environ: Mapping[str, str], home: Path | None = None
) -> list[str]:
    """`config check`'s pre-flight: every configured role, then every other secret."""
    problems = role_problems(settings, [name for name, _ in settings.roles.all()], environ, home)
    for key, secret in secrets_of(settings):
        if key.startswith("providers."):
            continue
        problem = unresolvable(secret, key, environ, home)
        if problem is not None:
            problems.append(problem)
    return problems


def check_roles(
    settings: Settings,
    role_names: Sequence[str],
    environ: Mapping[str, str],
    home: Path | None = None,
) -> None:
    """Raise `PreflightError` when the named roles surely cannot work."""
    problems = role_problems(settings, role_names, environ, home)
    if problems:
        raise PreflightError.of(problems)
