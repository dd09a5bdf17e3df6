"""Fixtures shared by several test modules."""

from __future__ import annotations

import collections.abc
import os
import pathlib
import signal

import pytest

from overbrainer.devtools.stub_provider import check_exchanges
from overbrainer.targets import registry  # noqa: F401 (the kinds register their settings)
from tests.axolotl_support import axolotl_venv, child_base, demo_dataset  # noqa: F401
from tests.hub_support import FakeHub, fake_hub
from tests.litellm_support import litellm_venv_path  # noqa: F401 (shared fixture)
from tests.llama_support import llama_release, llama_tools  # noqa: F401 (shared fixtures)
from tests.lm_eval_support import lm_eval_command  # noqa: F401 (shared fixture)
from tests.sshd_support import Sshd, make_sshd
from tests.standin_contract import StandinContract
from tests.timeouts import pytest_collection_modifyitems, pytest_timeout_set_timer  # noqa: F401

pytest_plugins = ["tests.tiers"]


WORKERS_PER_CPU = 2
"""`-n auto`'s workers per CPU: most tests wait on a subprocess, a socket or a file, not a CPU."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: `WORKERS_PER_CPU` per usable CPU, unless PYTEST_XDIST_AUTO_NUM_WORKERS says."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # pytest-xdist reads it
    return WORKERS_PER_CPU * len(os.sched_getaffinity(0))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test whose real part is missing in CI fails (tests/real_parts.py)."""
    for mark in item.iter_markers("missing_real_part"):
        pytest.fail(f"CI=true and a real part is missing: {mark.args[0]}", pytrace=False)


@pytest.fixture(autouse=True)
def restored_signals() -> collections.abc.Iterator[None]:
    """SIGINT and SIGTERM handled after each test as before it: a caught one leaves them ignored.

    A handler left at SIG_IGN would pass on to every child process the suite starts later, and
    a child that must see a Ctrl-C (tests/test_project.py's lock holder) would then never end.
    """
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    yield
    for signum, handler in saved.items():
        if handler is not None:  # None: set outside Python, which no test changes
            signal.signal(signum, handler)


@pytest.fixture(autouse=True)
def standin_contract() -> collections.abc.Iterator[StandinContract]:
    """Every stand-in provider of the test checked against the published APIs.

    A test fails when a stub is left with a violation: a request the real API would refuse,
    or an answer of the stub's own that it would never send. A test that sends a bad request
    on purpose clears `stub.violations` after checking them.
    """
    contract = StandinContract()
    before = check_exchanges(contract)
    try:
        yield contract
    finally:
        check_exchanges(before)
    left = contract.violations()
    assert not left, f"exchanges off the provider's API: {left}"


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> collections.abc.Iterator[Sshd]:
    """A real sshd on 127.0.0.1 for one test module (skipped where sshd cannot run)."""
    server = make_sshd(tmp_path_factory.mktemp("sshd"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def hub(tmp_path: pathlib.Path) -> collections.abc.Iterator[FakeHub]:
    """The fake Hub on loopback for one test (the push tests and the nightly example)."""
    with fake_hub(tmp_path) as running:
        yield running
