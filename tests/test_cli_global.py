"""Global flags in either place, the project found from a subdirectory, `--events` checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from overbrainer.cli import commands_registry  # noqa: F401
from overbrainer.cli.global_options import hoist_global_options
from overbrainer.cli.group import cli
from overbrainer.cli.runs_command import NO_RUNS
from tests.pipeline_support import make_project, write_answered

MISSING = "No such file or directory; "


LOOPBACK = "http://127.0.0.1:9/v1"


def overbrainer(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the real command in `cwd` to its end (none of these reach a provider)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    return subprocess.run(
        [sys.executable, "-m", "overbrainer", *args],
        cwd=cwd,
        # A loopback URL for the projects' provider, so config check's pre-flight passes.
        env={**clean, "NO_COLOR": "1", "OVERBRAINER_PROVIDERS__STUB__BASE_URL": LOOPBACK},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def hoisted(*args: str) -> list[str]:
    return hoist_global_options(cli, click.Context(cli), list(args))


# --- where the global flags may go ------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("run", "-C", "demo"), ["-C", "demo", "run"]),
        (("-C", "demo", "run"), ["-C", "demo", "run"]),
        (("run", "--project-dir=demo", "--no-train"), ["--project-dir=demo", "run", "--no-train"]),
        (("run", "-Cdemo"), ["-Cdemo", "run"]),
        (("config", "check", "--events", "e.jsonl"), ["--events", "e.jsonl", "config", "check"]),
        (
            ("train", "--target", "-C", "attach", "r1", "-C", "d"),
            ["-C", "d", "train", "--target", "-C", "attach", "r1"],
        ),
        (
            ("answers", "--topic", "x", "--", "-C", "d"),
            ["answers", "--topic", "x", "--", "-C", "d"],
        ),
        (
            ("runs", "logs", "r1", "--tail", "3", "-C", "d"),
            ["-C", "d", "runs", "logs", "r1", "--tail", "3"],
        ),
    ],
)
def test_global_options_after_the_command_move_before_it(
    args: tuple[str, ...], expected: list[str]
) -> None:
    assert hoisted(*args) == expected


def test_a_global_option_without_its_value_is_a_usage_error() -> None:
    with pytest.raises(click.BadOptionUsage, match="Option '-C' requires an argument"):
        hoisted("run", "-C")


@pytest.mark.parametrize("before", [True, False])
def test_project_dir_works_before_and_after_the_command(tmp_path: Path, before: bool) -> None:
    make_project(tmp_path / "demo")
    args = ("-C", "demo", "config", "check") if before else ("config", "check", "-C", "demo")
    done = overbrainer(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "providers.stub.protocol = openai" in done.stdout.splitlines()


@pytest.mark.parametrize("before", [True, False])
def test_events_works_before_and_after_the_command(tmp_path: Path, before: bool) -> None:
    root = make_project(tmp_path / "demo")
    write_answered(root, 20)
    events = tmp_path / "events.jsonl"
    flag = ("--events", str(events))
    args = (*flag, "split") if before else ("split", *flag)
    done = overbrainer(*args, cwd=root)
    assert done.returncode == 0, done.stderr
    kinds = [json.loads(line)["event"] for line in events.read_text().splitlines()]
    assert kinds[0] == "stage_started"
    assert kinds[-1] == "stage_finished"


def test_a_dangling_global_option_is_one_error_line(tmp_path: Path) -> None:
    done = overbrainer("run", "-C", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2,
        "error: Option '-C' requires an argument; see `overbrainer --help`\n",
    )


def test_help_says_where_global_options_go(tmp_path: Path) -> None:
    done = overbrainer("--help", cwd=tmp_path)
    assert "`overbrainer -C demo run` is `overbrainer run -C demo`" in " ".join(done.stdout.split())


# --- the project found from a subdirectory ------------------------------------------------------


def test_a_command_in_a_subdirectory_finds_the_project_above(tmp_path: Path) -> None:
    root = make_project(tmp_path / "demo")
    deep = root / "data" / "a" / "b"
    deep.mkdir(parents=True)
    done = overbrainer("runs", "ls", cwd=deep)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", NO_RUNS + "\n")
    checked = overbrainer("config", "check", cwd=deep)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.splitlines()[0] == "project.name = demo"


def test_the_nearest_project_wins(tmp_path: Path) -> None:
    make_project(tmp_path / "outer")
    inner = make_project(tmp_path / "outer" / "inner")
    (inner / "overbrainer.toml").write_text(
        (inner / "overbrainer.toml").read_text().replace('name = "demo"', 'name = "inner"', 1)
    )
    (inner / "sub").mkdir()
    done = overbrainer("config", "check", cwd=inner / "sub")
    assert done.stdout.splitlines()[0] == "project.name = inner"


def test_project_dir_is_where_the_search_starts(tmp_path: Path) -> None:
    root = make_project(tmp_path / "demo")
    (root / "data").mkdir()
    split = overbrainer("split", "-C", "demo/data", cwd=tmp_path)
    # No answers yet: split writes its (empty) files where the project is, and fails for it.
    assert split.returncode == 1, split.stderr
    assert "there are no answers yet" in split.stderr
    assert (root / "data" / "train.jsonl").exists()
    assert not (root / "data" / "data").exists()


def test_outside_any_project_the_message_names_the_start(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    done = overbrainer("runs", "ls", cwd=tmp_path / "a")
    assert (done.returncode, done.stderr) == (
        2,
        f"error: cannot read overbrainer.toml: {MISSING}this directory is not in an "
        "overbrainer project: make one with `overbrainer init`\n",
    )
    done = overbrainer("-C", "a", "history", cwd=tmp_path)
    assert done.stderr == (
        f"error: cannot read a/overbrainer.toml: {MISSING}"
        "a is not in an overbrainer project: make one with `overbrainer init a`\n"
    )
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a"]


def test_a_missing_start_directory_is_not_searched_from(tmp_path: Path) -> None:
    make_project(tmp_path / "demo")
    done = overbrainer("-C", "demo/nope", "history", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2,
        f"error: cannot read demo/nope/overbrainer.toml: {MISSING}"
        "demo/nope does not exist: make a project there with `overbrainer init demo/nope`\n",
    )


def test_init_in_a_subdirectory_writes_there(tmp_path: Path) -> None:
    make_project(tmp_path)
    (tmp_path / "nested").mkdir()
    assert overbrainer("init", cwd=tmp_path / "nested").returncode == 0
    assert (tmp_path / "nested" / "overbrainer.toml").is_file()


# --- --events ---------------------------------------------------------------------------------


def test_events_in_a_missing_directory_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    root = make_project(tmp_path / "demo")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    target = tmp_path / "nonexistent" / "dir" / "ev.jsonl"
    done = overbrainer("run", "--events", str(target), cwd=root)
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        f"error: cannot open the events file {target}: directory {target.parent} does not exist\n",
    )
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


# --- runs ls ----------------------------------------------------------------------------------


def test_runs_ls_with_no_runs_says_so_on_stderr(tmp_path: Path) -> None:
    make_project(tmp_path)
    done = overbrainer("runs", "ls", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "",
        "no runs yet: start one with `overbrainer train`\n",
    )
