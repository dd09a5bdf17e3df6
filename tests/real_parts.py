"""What a test does when a real part it needs (sshd, tmux, a compiler, dash, curl) is missing:
skip on a developer's machine, fail under CI (`CI=true`), where a missing part is a broken
install step, never a reason to pass.

`needs(absent, reason)` is the mark for a whole test or module; `needs_modules(...)` the same
for Python packages (torch, gguf); `missing(reason)` stops a fixture or test at once. In CI the
mark becomes `missing_real_part`, which conftest.py fails. Modules that need such packages import
them inside their tests, so that collecting them (and deselecting them) never needs them.
"""

from __future__ import annotations

import importlib.util
import os
from typing import NoReturn

import pytest

IN_CI = os.environ.get("CI") == "true"


def missing(reason: str) -> NoReturn:
    """Skip (fail in CI) because a real part is not here."""
    if IN_CI:
        pytest.fail(f"CI=true and a real part is missing: {reason}", pytrace=False)
    pytest.skip(reason)


def needs(absent: bool, reason: str) -> pytest.MarkDecorator:
    """A mark: skip when `absent` (in CI: fail), run otherwise."""
    if absent and IN_CI:
        return pytest.mark.missing_real_part(reason)
    return pytest.mark.skipif(absent, reason=reason)


def needs_modules(*names: str) -> pytest.MarkDecorator:
    """A mark: skip (in CI: fail) unless every named package can be imported."""
    absent = [name for name in names if importlib.util.find_spec(name) is None]
    where = "install torch==2.13.0 and the rest as .ci/run's torch step does"
    return needs(bool(absent), f"{', '.join(absent) or 'nothing'} not installed here: {where}")
