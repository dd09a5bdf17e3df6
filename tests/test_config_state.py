"""A config reload carries the new environment in the config state, never in `os.environ`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from overbrainer.flows.config_state import ConfigState
from overbrainer.project.directory import open_project
from tests.pipeline_support import make_project

KEY = "OB_RELOAD_TEST_VALUE"


@pytest.fixture
def project_root(tmp_path: Path) -> Iterator[Path]:
    root = make_project(tmp_path / "p")
    (root / ".env").write_text(f"{KEY}=first\n", encoding="utf-8")
    assert KEY not in os.environ
    try:
        yield root
    finally:
        os.environ.pop(KEY, None)  # the one read of `.env` at the start put it there


def test_a_reload_changes_the_states_environment_not_the_processes(project_root: Path) -> None:
    config = ConfigState(open_project(project_root))
    assert config.env[KEY] == "first"
    before = dict(os.environ)
    (project_root / ".env").write_text(f"{KEY}=second\nOB_RELOAD_TEST_NEW=1\n", encoding="utf-8")
    os.utime(project_root / ".env", ns=(1, 1))  # a changed stamp even within the clock's tick
    assert config.reload_if_changed()
    assert (config.env[KEY], config.env["OB_RELOAD_TEST_NEW"]) == ("second", "1")
    assert dict(os.environ) == before


def test_a_reload_starts_again_from_the_shells_environment(project_root: Path) -> None:
    config = ConfigState(open_project(project_root))
    (project_root / ".env").write_text("", encoding="utf-8")
    os.utime(project_root / ".env", ns=(1, 1))
    assert config.reload_if_changed()
    assert KEY not in config.env  # gone from `.env`: not kept from the first read
    assert not config.reload_if_changed()
