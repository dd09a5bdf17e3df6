"""The pod's bootstrap and watchdog scripts, shipped as package data (reference §7.7)."""

from __future__ import annotations

import functools
from importlib import resources

WATCHDOG_END = "OVERBRAINER_WATCHDOG_END"


@functools.cache
def script_text(name: str) -> str:
    """A script of `overbrainer/targets/runpod/scripts/` (`bootstrap.sh`, `watchdog.sh`)."""
    return (
        resources.files("overbrainer.targets.runpod").joinpath("scripts", name).read_text("utf-8")
    )


def bootstrap_script() -> str:
    """The whole command a pod runs: the bootstrap's functions, the watchdog as a quoted
    heredoc (nothing in it is expanded), then `bootstrap_main`."""
    watchdog = script_text("watchdog.sh")
    if WATCHDOG_END in watchdog:
        raise AssertionError("the watchdog script contains its own heredoc end marker")
    return (
        script_text("bootstrap.sh")
        + f"\nwrite_watchdog() {{\n    cat <<'{WATCHDOG_END}'\n"
        + watchdog
        + f"{WATCHDOG_END}\n}}\n\nbootstrap_main\n"
    )
