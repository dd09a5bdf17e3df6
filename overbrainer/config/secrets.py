"""Secrets: a literal or a `vault:<mount>/<path>#<field>` reference, resolved only when needed."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import attrs

from overbrainer.model import redact
from overbrainer.model.errors import EXIT_USAGE, OverbrainerError

VAULT_PREFIX = "vault:"
_BAD_REFERENCE = "invalid secret reference: expected vault:<mount>/<path>#<field>"
_VAULT_TIMEOUT = 30.0


class SecretError(OverbrainerError):
    """A secret could not be parsed or resolved; the message never holds the secret."""

    # A configuration problem, as when a stage command meets it while connecting (exit 2).
    exit_code = EXIT_USAGE


@attrs.frozen
class VaultRef:
    """A parsed `vault:<mount>/<path>#<field>` reference (no secret in it)."""

    mount: str
    path: str
    field: str

    def __str__(self) -> str:
        return f"{VAULT_PREFIX}{self.mount}/{self.path}#{self.field}"


@attrs.frozen(repr=False)
class Secret:
    """A secret value as configured; its repr and str never show it."""

    text: str = attrs.field(eq=True)

    def __repr__(self) -> str:
        return "Secret(***)"

    def __str__(self) -> str:
        return "***"

    @property
    def is_reference(self) -> bool:
        """Whether the value is a `vault:` reference rather than a literal."""
        return self.text.startswith(VAULT_PREFIX)

    def reference(self) -> VaultRef | None:
        """The parsed reference, None for a literal; raises SecretError when malformed."""
        return parse_reference(self.text) if self.is_reference else None


def parse_reference(text: str) -> VaultRef:
    """Parse `vault:<mount>/<path>#<field>`; mount, path and field all non-empty."""
    body = text[len(VAULT_PREFIX) :]
    location, sep, field = body.rpartition("#")
    mount, slash, path = location.partition("/")
    if not sep or not slash or not mount or not path or not field:
        raise SecretError(_BAD_REFERENCE)
    return VaultRef(mount=mount, path=path, field=field)


def vault_token(environ: Mapping[str, str], home: Path | None = None) -> str | None:
    """The token from `VAULT_TOKEN`, else `~/.vault-token` (trimmed, non-empty), else None.

    The token found is registered for redaction.
    """
    token = environ.get("VAULT_TOKEN", "").strip()
    if token:
        redact.register(token)
        return token
    token_file = (home if home is not None else Path(os.path.expanduser("~"))) / ".vault-token"
    try:
        token = token_file.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    redact.register(token)
    return token or None


async def resolve_secret(
    secret: Secret,
    key: str,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> str:
    """The secret's value; a reference is read from Vault/OpenBao KV v2.

    `key` names the setting (e.g. `providers.openrouter.api_key`) in the error
    `cannot resolve <key>: <cause>`; the value never appears in it. The value is registered
    for redaction before it is returned.
    """
    env = os.environ if environ is None else environ
    try:
        ref = secret.reference()
        value = secret.text if ref is None else await _read_vault(ref, env, home)
        redact.register(value)
        return value
    except SecretError as error:
        raise SecretError(f"cannot resolve {key}: {error.message}") from None


def vault_location(ref: VaultRef, environ: Mapping[str, str], home: Path | None) -> tuple[str, str]:
    """The URL to read `ref` from and the token to send; SecretError when either is missing.

    Needs no network: what it refuses, a read would surely fail on.
    """
    address = environ.get("VAULT_ADDR", "").strip()
    redact.register_url(address)
    if not address:
        raise SecretError("a vault: reference was found but VAULT_ADDR is not set")
    token = vault_token(environ, home)
    if token is None:
        raise SecretError(
            "VAULT_ADDR is set but no token was found in VAULT_TOKEN or ~/.vault-token"
        )
    import httpx2  # on use: reading settings (every command that does) needs no HTTP client

    try:
        base = httpx2.URL(address.rstrip("/"))
        if base.scheme not in ("http", "https") or not base.host:
            raise ValueError("expected an http or https URL")
    except (ValueError, httpx2.InvalidURL) as error:
        raise SecretError(f"invalid VAULT_ADDR: {error}") from None
    return f"{str(base).rstrip('/')}/v1/{ref.mount}/data/{ref.path}", token


def unresolvable(
    secret: Secret, key: str, environ: Mapping[str, str], home: Path | None = None
) -> str | None:
    """Why `secret` surely cannot be resolved, known without the network; None if it may be.

    Reads `~/.vault-token` when it is needed (blocking: call it off the event loop).
    """
    try:
        ref = secret.reference()
        if ref is not None:
            vault_location(ref, environ, home)
    except SecretError as error:
        return f"cannot resolve {key}: {error.message}"
    return None


async def _read_vault(ref: VaultRef, environ: Mapping[str, str], home: Path | None) -> str:
    import httpx2

    url, token = vault_location(ref, environ, home)
    headers = {"X-Vault-Token": token}
    try:
        async with httpx2.AsyncClient(timeout=_VAULT_TIMEOUT) as client:
            response = await client.get(url, headers=headers)
    except httpx2.HTTPError:
        raise SecretError("vault request failed") from None
    if response.status_code != 200:
        raise SecretError(f"vault request failed (HTTP {response.status_code})")
    try:
        payload = response.json()
        data = payload["data"]["data"]
    except (ValueError, KeyError, TypeError):
        raise SecretError("vault returned a response that could not be parsed") from None
    value = data.get(ref.field) if isinstance(data, dict) else None
    if not isinstance(value, str):
        raise SecretError(f"field missing or not a string at {ref}")
    return value
