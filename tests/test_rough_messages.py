"""Messages a new user hit (issue 40) through the real command: one exact line, its exit code,
nothing written."""

from __future__ import annotations

from pathlib import Path

from tests.pipeline_support import make_project
from tests.test_bad_input import snapshot
from tests.test_cli_global import overbrainer


def test_a_table_given_twice_names_the_table_and_both_lines(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    config = root / "overbrainer.toml"
    text = config.read_text()
    first = text.split("\n").index("[pipeline]") + 1
    config.write_text(text + "\n[pipeline]\nconcurrency = 2\n")
    second = text.count("\n") + 2
    before = snapshot(root)
    done = overbrainer("-C", "p", "config", "check", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "error: invalid configuration: TOML syntax error in overbrainer.toml at line "
        f"{second}, column 10: table [pipeline] is defined twice (first at line {first})\n",
    )
    assert snapshot(root) == before


def test_a_key_given_twice_is_named(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    config = root / "overbrainer.toml"
    text = config.read_text().replace("max_retries = 2\n", "max_retries = 2\nmax_retries = 3\n")
    config.write_text(text)
    line = text.split("\n").index("max_retries = 3") + 1
    done = overbrainer("-C", "p", "config", "check", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2,
        "error: invalid configuration: TOML syntax error in overbrainer.toml at line "
        f"{line}, column 16: key `max_retries` is defined twice\n",
    )


def test_a_missing_directory_is_said_to_be_missing_with_its_init(tmp_path: Path) -> None:
    done = overbrainer("-C", "missing", "history", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "error: cannot read missing/overbrainer.toml: No such file or directory; missing does "
        "not exist: make a project there with `overbrainer init missing`\n",
    )
    assert list(tmp_path.iterdir()) == []


def test_a_directory_outside_any_project_gets_its_init(tmp_path: Path) -> None:
    (tmp_path / "my dir").mkdir()
    done = overbrainer("-C", "my dir", "history", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2,
        "error: cannot read my dir/overbrainer.toml: No such file or directory; my dir is not "
        "in an overbrainer project: make one with `overbrainer init 'my dir'`\n",
    )
    assert [p.name for p in tmp_path.rglob("*")] == ["my dir"]


def test_init_under_dash_c_hints_with_dash_c(tmp_path: Path) -> None:
    done = overbrainer("-C", "gi3", "init", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (
        0,
        "next: copy .env.example to .env and put the provider's key in it, "
        "then `overbrainer -C gi3 config check` and `overbrainer -C gi3 run`\n",
    )
    # The hint works where it was printed: its command finds the project just written.
    hinted = overbrainer("-C", "gi3", "history", cwd=tmp_path)
    assert (hinted.returncode, hinted.stdout) == (0, "no stage has run yet\n")
    demo = overbrainer("-C", "gi4", "init", "--demo", cwd=tmp_path)
    assert demo.stdout == "next: make the demo dataset with `overbrainer -C gi4 run --no-train`\n"
