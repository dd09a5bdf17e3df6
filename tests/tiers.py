"""The quick tier: tests that took over `SLOW_SECONDS` in the recorded run are marked `slow`.

`tests/durations.json` holds each test's wall time (setup, call and teardown) from a whole run
of the suite, written by `pytest --record-durations` (`nox -s durations`). `nox -s quick` runs
`-m "not slow"`: every module's quick tests, plus the end-to-end paths marked `quick`, which
stay in the tier however long they take. A test the file does not know yet (a new one) counts
as quick until the file is recorded again.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("durations.json")
SLOW_SECONDS = 1.0
"""A test that took longer than this in the recorded run is `slow` (left out of the quick tier)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """`--record-durations`: write tests/durations.json at the end of the run."""
    parser.addoption(
        "--record-durations",
        action="store_true",
        help="write each test's wall time to tests/durations.json (the quick tier's source)",
    )


def recorded_durations() -> dict[str, float]:
    """The recorded wall time of each test by node ID (empty when there is no record)."""
    try:
        loaded = json.loads(DURATIONS.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return {str(node): float(seconds) for node, seconds in loaded.items()}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `slow` each test recorded as slower than `SLOW_SECONDS`, unless it is marked `quick`;
    then put the modules that took longest first."""
    durations = recorded_durations()
    mark_slow_tests(items, durations)
    longest_modules_first(items, durations)


def longest_modules_first(items: list[pytest.Item], durations: dict[str, float]) -> None:
    """Order the modules by their recorded time, longest first, each module's tests kept
    together and in their order.

    pytest-xdist hands the tests out in this order as its workers become free: a long module
    started last would keep one worker busy while the others have nothing left (the longest
    first is the classic rule for spreading jobs over machines). Every worker collects the
    same order, as xdist requires, since the sort depends only on the file and the node IDs.
    """
    per_module: defaultdict[str, float] = defaultdict(float)
    for item in items:
        per_module[item.nodeid.partition("::")[0]] += durations.get(item.nodeid, 0.0)
    position = {id(item): index for index, item in enumerate(items)}
    items.sort(key=lambda item: (-per_module[item.nodeid.partition("::")[0]], position[id(item)]))


def mark_slow_tests(items: list[pytest.Item], durations: dict[str, float] | None = None) -> None:
    """Mark `slow` each test recorded as slower than `SLOW_SECONDS`, unless it is marked `quick`."""
    durations = recorded_durations() if durations is None else durations
    for item in items:
        if item.get_closest_marker("quick") is not None:
            continue
        if durations.get(item.nodeid, 0.0) > SLOW_SECONDS:
            item.add_marker(pytest.mark.slow)


class DurationRecorder:
    """Adds up each test's phases as their reports arrive (from every xdist worker) and writes
    them sorted at the end, merged over what the file had for tests this run did not run."""

    def __init__(self) -> None:
        self.seconds: defaultdict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Add this phase's time to its test."""
        self.seconds[report.nodeid] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Write the file (the controller only: a worker's reports reach the controller too)."""
        if hasattr(session.config, "workerinput"):
            return
        merged = recorded_durations() | {node: round(s, 2) for node, s in self.seconds.items()}
        text = json.dumps(dict(sorted(merged.items())), indent=0)
        DURATIONS.write_text(text + "\n", encoding="utf-8")


def pytest_configure(config: pytest.Config) -> None:
    """Install the recorder when asked to."""
    if config.getoption("record_durations"):
        config.pluginmanager.register(DurationRecorder(), "overbrainer-durations")
