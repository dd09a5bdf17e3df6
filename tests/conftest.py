"""Fixtures shared by several test modules."""

from __future__ import annotations

import collections.abc

import pytest

from tests.axolotl_support import axolotl_venv, child_base, demo_dataset  # noqa: F401
from tests.llama_support import llama_release, llama_tools  # noqa: F401 (shared fixtures)
from tests.sshd_support import Sshd, make_sshd
from tests.timeouts import pytest_collection_modifyitems, pytest_timeout_set_timer  # noqa: F401


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test whose real part is missing in CI fails (tests/real_parts.py)."""
    for mark in item.iter_markers("missing_real_part"):
        pytest.fail(f"CI=true and a real part is missing: {mark.args[0]}", pytrace=False)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> collections.abc.Iterator[Sshd]:
    """A real sshd on 127.0.0.1 for one test module (skipped where sshd cannot run)."""
    server = make_sshd(tmp_path_factory.mktemp("sshd"))
    server.start()
    yield server
    server.stop()
