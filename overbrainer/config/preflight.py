"""The pre-flight: what would surely make a command fail, found before any request is sent.

It needs no network: an unset base URL, a `vault:` reference that cannot be resolved here (no
`VAULT_ADDR`, no token). A provider without a key is not refused: as in the reference, its
requests go without an auth header, which suits a self-hosted Ollama, llama.cpp or vLLM server
on this machine or another. Off loopback that is more often a forgotten key, so it is a
warning; a server that wants a key answers 401, which `config check --online` reports.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx2

from overbrainer.config.errors import ConfigError
from overbrainer.config.report import secrets_of
from overbrainer.config.secrets import unresolvable
from overbrainer.config.settings import Protocol, Provider, Settings

log = logging.getLogger(__name__)

KEYLESS = (
    "{key} {state} (set {env}__API_KEY if {host} needs one): its requests go without an "
    "auth header; {users}"
)


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


def _host(url: str) -> str:
    try:
        return httpx2.URL(url).host or url
    except (httpx2.InvalidURL, ValueError):
        return url


def _provider_problems(
    name: str, provider: Provider, users: str, environ: Mapping[str, str], home: Path | None
) -> list[str]:
    if provider.protocol is Protocol.STUB:
        return []
    if provider.base_url is None:
        env_name = f"OVERBRAINER_PROVIDERS__{name.upper()}"
        return [f"providers.{name}.base_url is not set (set {env_name}__BASE_URL); {users}"]
    if (key := provider.key) is None:
        return []
    problem = unresolvable(key, f"providers.{name}.api_key", environ, home)
    return [] if problem is None else [problem]


def _keyless_warning(name: str, provider: Provider, users: str) -> str | None:
    if provider.protocol is Protocol.STUB or provider.base_url is None or provider.key is not None:
        return None
    if is_loopback(provider.base_url):
        return None
    return KEYLESS.format(
        key=f"providers.{name}.api_key",
        state="is not set" if provider.api_key is None else "is empty",
        env=f"OVERBRAINER_PROVIDERS__{name.upper()}",
        host=_host(provider.base_url),
        users=users,
    )


def _role_users(settings: Settings, role_names: Sequence[str]) -> dict[str, str]:
    """Each provider the named roles use, with «roles.x and roles.y use it»."""
    users: dict[str, list[str]] = {}
    for name, role in settings.roles.all():
        if name in role_names:
            users.setdefault(role.provider, []).append(f"roles.{name}")
    judge = settings.quality.judge
    if judge is not None and "quality" in role_names:
        users.setdefault(judge.provider, []).append("quality.judge")
    return {
        provider: f"{' and '.join(roles)} use{'s' if len(roles) == 1 else ''} it"
        for provider, roles in users.items()
    }


def role_problems(
    settings: Settings,
    role_names: Sequence[str],
    environ: Mapping[str, str],
    home: Path | None = None,
) -> list[str]:
    """What stops the named roles' providers from working, one line each, provider by provider.

    Blocking (it may read `~/.vault-token`): call it off the event loop.
    """
    problems: list[str] = []
    for provider_name, used_by in _role_users(settings, role_names).items():
        provider = settings.providers[provider_name]
        problems += _provider_problems(provider_name, provider, used_by, environ, home)
    return problems


def role_warnings(settings: Settings, role_names: Sequence[str]) -> list[str]:
    """What may not work for the named roles' providers: a keyless one off loopback."""
    warnings: list[str] = []
    for provider_name, used_by in _role_users(settings, role_names).items():
        warning = _keyless_warning(provider_name, settings.providers[provider_name], used_by)
        if warning is not None:
            warnings.append(warning)
    return warnings


def _every_role(settings: Settings) -> list[str]:
    """Every configured role's name, with `quality` when `[quality] judge` is set."""
    names = [name for name, _ in settings.roles.all()]
    return names + (["quality"] if settings.quality.judge is not None else [])


def config_problems(
    settings: Settings, environ: Mapping[str, str], home: Path | None = None
) -> list[str]:
    """`config check`'s pre-flight: every configured role, then every other secret."""
    problems = role_problems(settings, _every_role(settings), environ, home)
    for key, secret in secrets_of(settings):
        if key.startswith("providers."):
            continue
        problem = unresolvable(secret, key, environ, home)
        if problem is not None:
            problems.append(problem)
    return problems


def config_warnings(settings: Settings) -> list[str]:
    """`config check`'s warnings: what may not work for any configured role."""
    return role_warnings(settings, _every_role(settings))


def check_roles(
    settings: Settings,
    role_names: Sequence[str],
    environ: Mapping[str, str],
    home: Path | None = None,
) -> None:
    """Raise `PreflightError` when the named roles surely cannot work; log what may not."""
    for warning in role_warnings(settings, role_names):
        log.warning(warning)
    problems = role_problems(settings, role_names, environ, home)
    if problems:
        raise PreflightError.of(problems)
