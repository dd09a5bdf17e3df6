"""The suite's bounds (tests/timeouts.py), on a tiny suite of hanging tests run by a real pytest."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.timeouts import trio_bound

REPO_ROOT = Path(__file__).resolve().parent.parent

CONFIG = """\
[pytest]
trio_mode = true
timeout = 2
markers =
    gguf: a real tool
"""

CONFTEST = """\
from tests.timeouts import pytest_collection_modifyitems, pytest_timeout_set_timer
"""

TESTS = """\
import threading

import pytest
import trio


async def test_hangs() -> None:
    await trio.sleep_forever()


async def test_hangs_on_autojump(autojump_clock: trio.abc.Clock) -> None:
    await trio.sleep_forever()


async def test_hangs_in_a_fixture(waits_forever: None) -> None:
    pass


async def test_virtual_hours_pass(autojump_clock: trio.abc.Clock) -> None:
    with trio.fail_after(4 * 3600 + 1):
        await trio.sleep(4 * 3600)


async def test_a_trio_test_that_fails() -> None:
    await trio.sleep(0)
    assert 1 == 2


@pytest.mark.gguf
def test_a_real_tool_gets_longer(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("timeout").args == (2400,)


@pytest.mark.timeout(30)
async def test_its_own_limit_is_kept(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("timeout").args == (30,)


@pytest.fixture
async def waits_forever() -> None:
    await trio.sleep_forever()
"""


def run_tiny_suite(tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    (tmp_path / "pytest.ini").write_text(CONFIG)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_tiny.py").write_text(TESTS)
    # Wide enough that the summary lines keep the whole message.
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "400"}
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "test_tiny.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, time.monotonic() - start


def test_a_hung_trio_test_fails_with_a_trio_cancellation_before_the_timeout(
    tmp_path: Path,
) -> None:
    done, took = run_tiny_suite(tmp_path)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    summary = [line for line in out.splitlines() if line.startswith(("PASSED", "FAILED"))]
    assert sorted(summary) == [
        "FAILED test_tiny.py::test_a_trio_test_that_fails - AssertionError('assert 1 == 2') "
        "[single exception in ExceptionGroup]",
        *(
            f"FAILED test_tiny.py::{name} - tests.timeouts.TrioTestTimeout: still running "
            "after 1 s of wall-clock time (50% of its 2 s timeout): cancelled; the "
            "Cancelled above shows where it waited"
            for name in ("test_hangs", "test_hangs_in_a_fixture", "test_hangs_on_autojump")
        ),
        "PASSED test_tiny.py::test_a_real_tool_gets_longer",
        "PASSED test_tiny.py::test_its_own_limit_is_kept",
        "PASSED test_tiny.py::test_virtual_hours_pass",
    ]
    # Trio cancelled them, with the place each waited; pytest-timeout never had to fire.
    assert "+++++ Timeout +++++" not in out
    assert out.count("trio.Cancelled: cancelled due to explicit") >= 3, out
    assert out.count("await trio.sleep_forever()") >= 3, out
    # Three hangs of 1 s each, and pytest's start-up: far from a hang pytest-timeout missed.
    # (The 1 s left after each cancel, REPORT_MARGIN, covers reporting the failure on a busy
    # machine.)
    assert took < 60


def test_the_trio_bound_leaves_time_to_report_before_pytest_timeout() -> None:
    limits = (2400, 300, 10, 8, 2, 1)
    assert [trio_bound(limit) for limit in limits] == pytest.approx([2160, 270, 9, 7, 1, 0.5])
