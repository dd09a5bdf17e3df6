"""A missing real part skips a test on a developer's machine and fails it under CI=true (the
mark fails the test's setup: an error; `missing` fails the test itself)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CHECKS = """
from tests.real_parts import missing, needs

@needs(True, "no frobnicator here")
def test_marked() -> None:
    pass

def test_stopped() -> None:
    missing("no widget here")
"""


@pytest.mark.parametrize(("ci", "outcome"), [("true", "1 failed, 1 error"), ("", "2 skipped")])
def test_a_missing_part_skips_outside_ci_and_fails_in_it(
    tmp_path: Path, ci: str, outcome: str
) -> None:
    (tmp_path / "test_checks.py").write_text(CHECKS)
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-c", str(REPO / "pyproject.toml")),
            *("-p", "tests.conftest", "-p", "no:cacheprovider", "-rEfs", "-q"),
            *("-n", "0"),  # two tests: xdist's workers would take longer to start than they run
            str(tmp_path / "test_checks.py"),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert outcome in done.stdout, done.stdout
    assert "no frobnicator here" in done.stdout and "no widget here" in done.stdout
    if ci:
        assert "CI=true and a real part is missing: no frobnicator here" in done.stdout
