"""config reads, checks and shows `[targets.<n>]` only through the kinds registered with it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import attrs
import pytest

from overbrainer.config.load import load_settings
from overbrainer.config.report import report_lines
from overbrainer.config.settings import reconnect_secs
from overbrainer.config.target_settings import (
    RECONNECT_SECS,
    SettingsKind,
    Shown,
    TargetSettings,
    add_settings_kind,
    remove_settings_kind,
    settings_kinds,
)
from tests.config_support import BASE, failure, write


@attrs.frozen
class Bench:
    """A toy `[targets.<n>] kind = "bench"`, known to config alone."""

    seats: int = 1
    reconnect_secs: float = 60.0

    kind: ClassVar[str] = "bench"


def _bench(target: TargetSettings) -> Bench:
    assert isinstance(target, Bench)
    return target


def _summary(target: TargetSettings, shown: Shown) -> list[tuple[str, str]]:
    return [("", f"bench of {_bench(target).seats}"), (".seats", str(_bench(target).seats))]


BENCH = SettingsKind(
    name="bench",
    settings_type=Bench,
    summary=_summary,
    problems=lambda name, t: (
        [f"targets.{name}.seats: must be at least 1"] if _bench(t).seats < 1 else []
    ),
    range_problems=lambda name, t: (
        [f"targets.{name}.seats: must be at most 9"] if _bench(t).seats > 9 else []
    ),
    reconnect_secs=lambda t: _bench(t).reconnect_secs,
)


@pytest.fixture
def bench() -> Iterator[SettingsKind]:
    add_settings_kind(BENCH)
    try:
        yield BENCH
    finally:
        remove_settings_kind(BENCH.name)


def test_config_alone_knows_no_kind() -> None:
    script = (
        "import overbrainer.config.load, overbrainer.config.report\n"
        "from overbrainer.config.target_settings import settings_kinds\n"
        "print(sorted(settings_kinds()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "[]\n"


def test_a_registered_kind_is_read_shown_and_asked_its_reconnect(
    tmp_path: Path, bench: SettingsKind
) -> None:
    root = write(tmp_path, BASE + '[targets.b]\nkind = "bench"\nseats = 3\n')
    settings = load_settings(root, {"OVERBRAINER_TARGETS__B__RECONNECT_SECS": "90"})
    assert settings.targets["b"] == Bench(seats=3, reconnect_secs=90.0)
    assert reconnect_secs(settings.targets["b"]) == 90.0
    assert reconnect_secs(None) == RECONNECT_SECS
    lines = report_lines(settings)
    assert "targets.b = bench of 3  (env)" in lines
    assert "targets.b.seats = 3" in lines


def test_a_kinds_problems_come_where_the_reference_order_puts_them(
    tmp_path: Path, bench: SettingsKind
) -> None:
    text = (
        BASE.replace('model = "g" }', 'model = "g", price_in = 1 }')
        + '[targets.low]\nkind = "bench"\nseats = 0\nreconnect_secs = 0\n'
        + '[targets.high]\nkind = "bench"\nseats = 10\n'
    )
    message = failure(write(tmp_path, text), {})
    assert message.splitlines()[1:] == [
        "  targets.low.seats: must be at least 1",
        "  roles.generator: price_in and price_out must be set together",
        "  targets.low.reconnect_secs: must be in (0, 86400]",
        "  targets.high.seats: must be at most 9",
    ]


def test_an_unregistered_kind_is_refused_and_names_the_registered_ones(
    tmp_path: Path, bench: SettingsKind
) -> None:
    remove_settings_kind(BENCH.name)
    message = failure(write(tmp_path, BASE + '[targets.b]\nkind = "bench"\n'), {})
    assert "`targets.b` has the wrong type, expected kind local, ssh, runpod or ray" in message
    assert list(settings_kinds())[:3] == ["local", "ssh", "runpod"]


def test_a_second_class_for_a_kind_name_is_refused(bench: SettingsKind) -> None:
    add_settings_kind(BENCH)  # the same again: nothing changes
    with pytest.raises(ValueError, match="already read into Bench"):
        add_settings_kind(attrs.evolve(BENCH, settings_type=attrs.make_class("Other", [])))


def test_a_command_registers_the_kinds_only_when_it_reads_a_target(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from overbrainer.config.load import load_settings\n"
        "from overbrainer.config.target_settings import load_kinds_on_use\n"
        "from overbrainer.cli.running import register_target_kinds\n"
        "load_kinds_on_use(register_target_kinds)\n"
        "print('overbrainer.targets.registry' in sys.modules)\n"
        "settings = load_settings(Path(sys.argv[1]), {})\n"
        "print(type(settings.targets['box']).__name__)\n"
    )
    root = write(tmp_path, BASE + '[targets.box]\nkind = "local"\nruntime = "native"\n')
    done = subprocess.run(
        [sys.executable, "-c", script, str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.splitlines() == ["False", "LocalTarget"]
