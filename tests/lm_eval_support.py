"""The real lm-evaluation-harness for `overbrainer bench`'s tests: `OVERBRAINER_TEST_LM_EVAL` (what
`.ci/run` exports), else the cached venv `.ci/lm-eval-venv.sh` makes (once, a few minutes).
Missing under CI=true: the test fails (tests/real_parts.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.real_parts import missing

REPO_ROOT = Path(__file__).resolve().parent.parent
VENV_SCRIPT = REPO_ROOT / ".ci" / "lm-eval-venv.sh"


def lm_eval_path() -> Path:
    """The `lm_eval` command of the real lm-evaluation-harness."""
    given = os.environ.get("OVERBRAINER_TEST_LM_EVAL")
    if given:
        if not os.access(given, os.X_OK):
            missing(f"OVERBRAINER_TEST_LM_EVAL={given} is not an executable file")
        return Path(given)
    done = subprocess.run(["bash", str(VENV_SCRIPT)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        missing(f"installing lm-eval failed:\n{done.stderr[-4000:]}")
    command = Path(done.stdout.strip().splitlines()[-1]) / "bin" / "lm_eval"
    if not command.is_file():
        missing(f"{command} is not here after .ci/lm-eval-venv.sh")
    return command


@pytest.fixture(scope="session")
def lm_eval_command() -> Path:
    """The real `lm_eval` (installed once, then cached outside the checkout)."""
    return lm_eval_path()
