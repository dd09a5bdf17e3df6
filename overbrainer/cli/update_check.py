"""The once-a-day check for a newer overbrainer on the package registry (PyPI's JSON API).

The command never waits for the network: a fresh answer in the cache is used as it is; a stale
one starts a detached child process (`python -m overbrainer.cli.update_check URL CACHE`) that
asks the registry and writes the cache, and the command waits for it at most 0.5 s after its
own work. The attempt is written to the cache before the request, so a check that never
answers is not tried again for an hour. Every failure is logged at debug level only.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import attrs

from overbrainer import __version__
from overbrainer.storage import write_atomic

log = logging.getLogger(__name__)

DEFAULT_URL = "https://pypi.org/pypi/overbrainer/json"
URL_ENV = "OVERBRAINER_UPDATE_URL"
"""Where to ask instead of PyPI (a mirror, or a test's loopback registry)."""
OFF_ENV = "OVERBRAINER_NO_UPDATE_CHECK"
CACHE_FILE = "latest-version.json"
ANSWER_FRESH = 24 * 3600
ATTEMPT_FRESH = 3600
REQUEST_TIMEOUT = 3.0
WAIT_AFTER_COMMAND = 0.5
BODY_LIMIT = 64 * 1024
_VERSION = re.compile(r"[0-9A-Za-z.+-]{1,64}")
_RELEASE = re.compile(r"(\d+)\.(\d+)\.(\d+)(.*)")
NOTICE = "overbrainer {latest} is available (you have {current}): pip install -U overbrainer"
SKIPPED_COMMANDS = frozenset({"skill", "tui"})
"""`skill` never checks; `tui` shows nothing of it on stderr."""


@attrs.frozen
class CacheRecord:
    """`latest-version.json`: when it was checked, the answer (None: only an attempt)."""

    checked_at: float
    latest: str | None
    previous: str | None = None


@attrs.define
class PendingCheck:
    """A check started with the command: the child asking the registry, if one was needed."""

    cache: Path
    process: subprocess.Popen[bytes] | None


def cache_path(environ: Mapping[str, str]) -> Path | None:
    """`$XDG_CACHE_HOME/overbrainer/...` (absolute only), else `~/.cache/overbrainer/...`."""
    xdg = environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "overbrainer" / CACHE_FILE
    home = environ.get("HOME", "")
    if not home:
        return None
    return Path(home) / ".cache" / "overbrainer" / CACHE_FILE


def read_cache(path: Path) -> CacheRecord | None:
    """The cache's record, or None when it is missing or not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    checked_at = data.get("checked_at")
    latest = data.get("latest")
    previous = data.get("previous")
    if not isinstance(checked_at, int | float) or isinstance(checked_at, bool):
        return None
    if latest is not None and not (isinstance(latest, str) and _VERSION.fullmatch(latest)):
        return None
    if previous is not None and not (isinstance(previous, str) and _VERSION.fullmatch(previous)):
        previous = None
    return CacheRecord(float(checked_at), latest, previous)


def write_cache(path: Path, record: CacheRecord) -> None:
    """Write the record atomically (creating the directory)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data: dict[str, object] = {"checked_at": int(record.checked_at), "latest": record.latest}
    if record.previous is not None:
        data["previous"] = record.previous
    write_atomic(path, json.dumps(data) + "\n")


def is_fresh(record: CacheRecord, now: float) -> bool:
    """An answer is fresh for 24 h, an attempt for 1 h; a time in the future is stale."""
    age = now - record.checked_at
    if age < 0:
        return False
    return age < (ANSWER_FRESH if record.latest is not None else ATTEMPT_FRESH)


def is_newer(latest: str, current: str) -> bool:
    """Whether `latest` is a newer release: a greater major.minor.patch, or the same one when
    `current` is a pre-release and `latest` is not."""
    new, old = _RELEASE.fullmatch(latest), _RELEASE.fullmatch(current)
    if new is None or old is None:
        return False
    new_key = tuple(int(part) for part in new.groups()[:3])
    old_key = tuple(int(part) for part in old.groups()[:3])
    if new_key != old_key:
        return new_key > old_key
    return bool(old.group(4)) and not new.group(4)


def wanted(environ: Mapping[str, str], command: str | None, stderr_is_tty: bool) -> bool:
    """Whether this command checks: not when turned off, for `skill`/`tui`, or off a terminal."""
    if environ.get(OFF_ENV, ""):
        return False
    if command is None or command in SKIPPED_COMMANDS:
        return False
    return stderr_is_tty


def start_check(environ: Mapping[str, str], now: float | None = None) -> PendingCheck | None:
    """Use a fresh cache as it is, else record an attempt and start the child that asks."""
    path = cache_path(environ)
    if path is None:
        return None
    moment = time.time() if now is None else now
    record = read_cache(path)
    if record is not None and is_fresh(record, moment):
        return PendingCheck(path, None)
    previous = None if record is None else (record.latest or record.previous)
    try:
        write_cache(path, CacheRecord(moment, None, previous))
        process = subprocess.Popen(
            [sys.executable, "-m", "overbrainer.cli.update_check", _url(environ), str(path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C at the terminal is the command's, not its
        )
    except OSError as error:
        log.debug("update check not started: %s", error)
        return None
    return PendingCheck(path, process)


def finish_check(pending: PendingCheck, current: str = __version__) -> str | None:
    """Wait at most 0.5 s for the child, then the notice to print, if a newer release exists."""
    if pending.process is not None:
        try:
            pending.process.wait(timeout=WAIT_AFTER_COMMAND)
        except subprocess.TimeoutExpired:
            log.debug("update check: no answer within %.1f s", WAIT_AFTER_COMMAND)
    record = read_cache(pending.cache)
    latest = None if record is None else (record.latest or record.previous)
    if latest is None or not is_newer(latest, current):
        return None
    return NOTICE.format(latest=latest, current=current)


def _url(environ: Mapping[str, str]) -> str:
    return environ.get(URL_ENV) or DEFAULT_URL


def fetch_latest(url: str) -> str | None:
    """`info.version` from the registry's JSON (3 s, no redirects, at most 64 KiB), or None."""
    # Imported here, in the child that asks: urllib.request costs every command ~20 ms.
    import urllib.error
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect())
    request = urllib.request.Request(
        url, headers={"User-Agent": f"overbrainer/{__version__} (update check)"}
    )
    try:
        with opener.open(request, timeout=REQUEST_TIMEOUT) as response:
            body = response.read(BODY_LIMIT + 1)
    except (urllib.error.URLError, OSError, ValueError) as error:
        log.debug("update check failed: %s", error)
        return None
    if len(body) > BODY_LIMIT:
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None
    info = data.get("info") if isinstance(data, dict) else None
    version = info.get("version") if isinstance(info, dict) else None
    if isinstance(version, str) and _VERSION.fullmatch(version):
        return version
    return None


def _child(url: str, cache: Path) -> None:
    latest = fetch_latest(url)
    if latest is not None:
        write_cache(cache, CacheRecord(time.time(), latest))


if __name__ == "__main__":
    _child(sys.argv[1], Path(sys.argv[2]))
