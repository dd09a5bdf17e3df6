"""What a test does when a real part it needs (sshd, tmux, a compiler, dash, curl) is missing:
skip on a developer's machine, fail under CI (`CI=true`), where a missing part is a broken
install step, never a reason to pass.

`needs(absent, reason)` is the mark for a whole test or module; `missing(reason)` stops a
fixture or test at once. In CI the mark becomes `missing_real_part`, which conftest.py fails.
"""

from __future__ import annotations

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
