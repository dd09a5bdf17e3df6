"""One process-wide registry of the secrets this process knows, and `redact`, which masks them.

Secrets are registered where they become known (config load, a resolved `vault:` value, the
Vault token); every line that leaves the process (logs, events, history, printed lines,
tracebacks) goes through `redact` on its way out.
"""

from __future__ import annotations

import base64
import json
import threading
import urllib.parse

MASK = "***"
MIN_LENGTH = 8
"""Shorter values are not masked: too likely to be common words (`ollama`, `local`)."""

_lock = threading.Lock()
_known: set[str] = set()
# Longest first, so a secret that contains another is masked whole. Replaced, never mutated:
# `redact` reads it without the lock.
_ordered: tuple[str, ...] = ()


def _forms(secret: str) -> set[str]:
    """The secret as written, as JSON escapes it and as a URL percent-encodes it."""
    return {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        urllib.parse.quote(secret, safe=""),
    }


def _add(values: set[str]) -> None:
    global _ordered
    with _lock:
        fresh = {value for value in values if len(value) >= MIN_LENGTH} - _known
        if fresh:
            _known.update(fresh)
            _ordered = tuple(sorted(_known, key=len, reverse=True))


def register(secret: str | None) -> None:
    """Mask `secret` (and its JSON and URL encodings) from now on; short or empty is ignored.

    `Bearer <key>` and the like need nothing more: they contain the plain value.
    """
    if secret is None:
        return
    value = secret.strip()
    if len(value) >= MIN_LENGTH:
        _add(_forms(value))


def register_url(url: str | None) -> None:
    """Mask the userinfo of `url` (`user:password@`): the password, the pair, its Basic form.

    A userinfo without a password is a token: the user part is masked then.
    """
    if url is None:
        return
    _, sep, rest = url.partition("://")
    authority = rest.split("/", 1)[0] if sep else ""
    userinfo, at, _ = authority.rpartition("@")
    if not at or not userinfo:
        return
    user, colon, password = userinfo.partition(":")
    plain_user = urllib.parse.unquote(user)
    plain_password = urllib.parse.unquote(password)
    values = {userinfo}
    if colon and password:
        values |= _forms(password) | _forms(plain_password)
        pair = f"{plain_user}:{plain_password}".encode()
        values.add(base64.b64encode(pair).decode("ascii"))
    else:
        values |= _forms(user) | _forms(plain_user)
    _add({value.strip() for value in values})


def redact(text: str) -> str:
    """`text` with every registered secret replaced by `***`."""
    for secret in _ordered:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def registered() -> int:
    """How many strings are masked (every form of every secret)."""
    return len(_ordered)


def forget_all() -> None:
    """Drop every registered secret (tests only: a process never forgets a secret)."""
    global _ordered
    with _lock:
        _known.clear()
        _ordered = ()
