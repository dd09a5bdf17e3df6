"""Making file permissions hold for a command even when the suite runs as root (as in CI).

Without `setpriv`, or where it cannot drop the capability, such a test cannot check what it
means to: it skips on a developer's machine and fails under CI (`real_parts.missing`).
"""

from __future__ import annotations

import os
import shutil
import subprocess

from tests.real_parts import missing

NO_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
"""Root without the capabilities that let it write a read-only file: permissions then hold."""


def permissions_hold() -> list[str]:
    """The prefix that makes file permissions apply to the command; skips (in CI: fails) when
    none can."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        missing("running as root without setpriv: permissions cannot be made to hold")
    probe = subprocess.run([*NO_OVERRIDE, "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        missing("running as root and cannot drop CAP_DAC_OVERRIDE")
    return NO_OVERRIDE
