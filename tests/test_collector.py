"""The cycle collector's pause, and freeing a large list a slice at a time."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from overbrainer.storage import collector_paused
from overbrainer.storage.collector import FREE_SLICE, YOUNG_THRESHOLD, free_gradually

ENTRY_THEN_THRESHOLD = """
import gc, sys
sys.argv = ["overbrainer", "--version"]
from overbrainer.cli.entry import main
try:
    main()
except SystemExit:
    pass
print(gc.get_threshold())
"""


def test_the_pause_restores_the_collector_and_nests() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()
    with pytest.raises(ValueError), collector_paused():
        raise ValueError()
    assert gc.isenabled()


def test_a_pause_inside_a_disabled_collector_leaves_it_disabled() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_freeing_gradually_empties_the_list() -> None:
    items = [object() for _ in range(FREE_SLICE * 3 + 7)]
    free_gradually(items)
    assert items == []


def test_the_command_scans_the_young_generation_less_often() -> None:
    default = gc.get_threshold()
    done = subprocess.run(
        [sys.executable, "-c", ENTRY_THEN_THRESHOLD],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.splitlines()[-1] == str((YOUNG_THRESHOLD, *default[1:]))
