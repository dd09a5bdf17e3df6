"""The update check: its rules, and the real command against a loopback registry."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from overbrainer import __version__
from overbrainer.cli.update_check import (
    CacheRecord,
    cache_path,
    is_fresh,
    is_newer,
    read_cache,
    wanted,
    write_cache,
)
from overbrainer.net.http_server import Request, Response, serve_http
from tests.pipeline_support import make_project

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("latest", "current", "newer"),
    [
        ("0.2.0", "0.1.0", True),
        ("0.1.1", "0.1.0", True),
        ("1.0.0", "0.9.9", True),
        ("0.1.0", "0.1.0", False),
        ("0.0.9", "0.1.0", False),
        ("0.1.0", "0.1.0rc1", True),
        ("0.1.0rc2", "0.1.0rc1", False),
        ("0.2.0rc1", "0.1.0", True),
        ("nonsense", "0.1.0", False),
    ],
)
def test_newer_releases(latest: str, current: str, newer: bool) -> None:
    assert is_newer(latest, current) is newer


def test_freshness() -> None:
    assert is_fresh(CacheRecord(NOW - 23 * 3600, "1.0.0"), NOW)
    assert not is_fresh(CacheRecord(NOW - 25 * 3600, "1.0.0"), NOW)
    assert is_fresh(CacheRecord(NOW - 59 * 60, None), NOW)
    assert not is_fresh(CacheRecord(NOW - 61 * 60, None), NOW)
    assert not is_fresh(CacheRecord(NOW + 60, "1.0.0"), NOW)  # a clock in the future: stale


def test_cache_place(tmp_path: Path) -> None:
    assert cache_path({"XDG_CACHE_HOME": "/x", "HOME": "/h"}) == Path(
        "/x/overbrainer/latest-version.json"
    )
    assert cache_path({"XDG_CACHE_HOME": "rel", "HOME": "/h"}) == Path(
        "/h/.cache/overbrainer/latest-version.json"
    )
    assert cache_path({}) is None
    path = tmp_path / "c.json"
    write_cache(path, CacheRecord(NOW, "1.2.3", "1.2.2"))
    assert read_cache(path) == CacheRecord(NOW, "1.2.3", "1.2.2")
    path.write_text('{"checked_at": "x", "latest": "1"}')
    assert read_cache(path) is None


def test_when_it_checks() -> None:
    assert wanted({}, "answers", stderr_is_tty=True)
    assert not wanted({}, "answers", stderr_is_tty=False)
    assert not wanted({"OVERBRAINER_NO_UPDATE_CHECK": "1"}, "answers", stderr_is_tty=True)
    assert not wanted({}, "skill", stderr_is_tty=True)
    assert not wanted({}, None, stderr_is_tty=True)


Handler = Callable[[Request], Response]


@asynccontextmanager
async def registry(
    answer: Callable[[], Response], hold: trio.Event | None = None
) -> AsyncIterator[str]:
    """A loopback registry answering `GET /pypi/overbrainer/json` (once `hold` is set, if
    given); yields its URL."""

    async def handle(request: Request) -> Response:
        if hold is not None:
            await hold.wait()
        return answer()

    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(serve_http, handle)
        yield f"http://{host}:{port}/pypi/overbrainer/json"
        nursery.cancel_scope.cancel()


def version_reply(version: str) -> Response:
    body = json.dumps({"info": {"version": version}}).encode()
    return Response(200, body, (("content-type", "application/json"),))


def run_on_a_terminal(root: Path, env: dict[str, str]) -> tuple[str, float]:
    """`overbrainer history` with stderr on a pseudo-terminal: what it wrote there, its time."""
    controller, terminal = pty.openpty()
    begun = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "overbrainer", "-C", str(root), "history"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=terminal,
            env=env,
            timeout=30,
            check=False,
        )
        took = time.monotonic() - begun
        assert done.returncode == 0
        os.close(terminal)
        terminal = -1
        chunks = []
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the terminal side is closed and drained
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        if terminal >= 0:
            os.close(terminal)
        os.close(controller)
    return b"".join(chunks).decode(), took


def check_env(tmp_path: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    env |= {"XDG_CACHE_HOME": str(tmp_path / "cache"), "OVERBRAINER_UPDATE_URL": url}
    return env


NOTICE = f"overbrainer 99.0.0 is available (you have {__version__}): pip install -U overbrainer"


async def test_a_newer_release_is_announced_once_asked_then_from_the_cache(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    async with registry(lambda: version_reply("99.0.0")) as url:
        env = check_env(tmp_path, url)
        first, _ = await trio.to_thread.run_sync(run_on_a_terminal, root, env)
        assert NOTICE in first
        record = read_cache(tmp_path / "cache" / "overbrainer" / "latest-version.json")
        assert record is not None and record.latest == "99.0.0"
    # The registry is gone: the answer comes from the cache (fresh for 24 h).
    again, _ = await trio.to_thread.run_sync(run_on_a_terminal, root, env)
    assert NOTICE in again


async def test_the_same_release_says_nothing(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with registry(lambda: version_reply(__version__)) as url:
        output, _ = await trio.to_thread.run_sync(run_on_a_terminal, root, check_env(tmp_path, url))
    assert "is available" not in output


async def test_an_unreachable_registry_says_nothing_and_waits_an_hour(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    env = check_env(tmp_path, "http://127.0.0.1:9/pypi/overbrainer/json")
    output, _ = await trio.to_thread.run_sync(run_on_a_terminal, root, env)
    assert "is available" not in output
    record = read_cache(tmp_path / "cache" / "overbrainer" / "latest-version.json")
    assert record is not None and record.latest is None  # the attempt, fresh for an hour


async def test_a_slow_registry_never_holds_the_command_beyond_half_a_second(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    held = trio.Event()
    async with registry(lambda: version_reply("99.0.0"), hold=held) as url:
        env = check_env(tmp_path, url) | {"OVERBRAINER_LOG": "overbrainer=debug"}
        # The registry answers only once the command has ended: had the command waited for
        # it, it would never end (run_on_a_terminal bounds it).
        output, _ = await trio.to_thread.run_sync(run_on_a_terminal, root, env)
        held.set()
    assert "is available" not in output
    assert "update check: no answer within 0.5 s" in output, output
