"""Shell completion through the real command: scripts, run ID, topic and target candidates."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from overbrainer.training.run_store import Runs, RunState
from tests.pipeline_support import make_project

TARGETS = """
[targets.gpu]
kind = "ssh"
runtime = "native"

[targets.laptop]
kind = "local"
runtime = "native"
"""


def complete(
    words: str, cword: int, *, cwd: Path, shell: str = "bash", extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """What the shell's completion function gets back for `words` with the cursor on `cword`."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    env = {**clean, "_OVERBRAINER_COMPLETE": f"{shell}_complete", **(extra or {})}
    if shell == "fish":  # fish hands the line up to the cursor, and the word being completed
        env |= {"COMP_WORDS": words, "COMP_CWORD": words.split(" ")[-1]}
    else:
        env |= {"COMP_WORDS": words, "COMP_CWORD": str(cword)}
    return subprocess.run(
        [sys.executable, "-m", "overbrainer"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def candidates(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert (done.returncode, done.stderr) == (0, "")
    return [line for line in done.stdout.splitlines() if line]


def with_runs(root: Path) -> list[str]:
    runs = Runs(root / "runs")
    first = runs.create("demo", "laptop", lambda run_id: f"/r/{run_id}")
    runs.save(attrs.evolve(first, state=RunState.SUCCEEDED))
    second = runs.create("demo", "gpu", lambda run_id: f"/r/{run_id}")
    return [first.id, second.id]


def test_run_ids_with_state_and_target_on_zsh(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    first, second = with_runs(root)
    lines = candidates(complete("overbrainer runs logs ", 3, cwd=root, shell="zsh"))
    assert lines == [
        "plain",
        first,
        "succeeded, laptop",
        "plain",
        second,
        "preparing, gpu",
    ]


def test_run_ids_for_train_subcommands_and_resume_from_on_bash(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    first, second = with_runs(root)
    for words in ("overbrainer train attach ", "overbrainer train --resume-from "):
        lines = candidates(complete(words, len(words.split()), cwd=root))
        assert lines == [f"plain,{first}", f"plain,{second}"]
    assert candidates(complete(f"overbrainer train cancel {second}", 3, cwd=root)) == [
        f"plain,{second}"
    ]
    assert candidates(complete("overbrainer train cancel zz", 3, cwd=root)) == []


def test_run_ids_on_fish_carry_their_help(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    first, _ = with_runs(root)
    lines = candidates(complete("overbrainer train stop ", 3, cwd=root, shell="fish"))
    assert lines[0] == f"plain,{first}\tsucceeded, laptop"


@pytest.mark.parametrize("command", ["answers", "questions", "subtopics", "split"])
def test_topic_names_for_topic(tmp_path: Path, command: str) -> None:
    root = make_project(tmp_path)
    assert candidates(complete(f"overbrainer {command} --topic ", 3, cwd=root)) == [
        "plain,ownership",
        "plain,async",
    ]
    assert candidates(complete(f"overbrainer {command} --topic a", 3, cwd=root)) == ["plain,async"]


def test_target_names_from_a_subdirectory_and_after_a_global_option(tmp_path: Path) -> None:
    root = make_project(tmp_path / "demo")
    config = root / "overbrainer.toml"
    config.write_text(config.read_text() + TARGETS)
    (root / "data").mkdir()
    expected = ["plain,gpu", "plain,laptop"]
    assert candidates(complete("overbrainer train --target ", 3, cwd=root / "data")) == expected
    words = "overbrainer train -C demo --target "
    assert candidates(complete(words, 5, cwd=tmp_path)) == expected
    words = "overbrainer -C demo train --target l"
    assert candidates(complete(words, 5, cwd=tmp_path)) == ["plain,laptop"]


def test_a_broken_config_or_no_project_gives_no_candidates_quietly(tmp_path: Path) -> None:
    root = make_project(tmp_path / "demo")
    (root / "overbrainer.toml").write_text("[project\nname = ")
    (root / "runs").write_text("not a directory")
    for words in ("overbrainer answers --topic ", "overbrainer train --target "):
        assert candidates(complete(words, 3, cwd=root)) == []
    assert candidates(complete("overbrainer runs logs ", 3, cwd=root)) == []
    (tmp_path / "empty").mkdir()
    assert candidates(complete("overbrainer train attach ", 3, cwd=tmp_path / "empty")) == []


def test_a_dangling_global_option_completes_quietly(tmp_path: Path) -> None:
    done = complete("overbrainer run -C ", 3, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")


def test_commands_complete(tmp_path: Path) -> None:
    assert "plain,runs" in candidates(complete("overbrainer ru", 1, cwd=tmp_path))


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_reference_way_prints_the_same_script_as_clicks(shell: str, tmp_path: Path) -> None:
    def script(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "overbrainer"],
            env={**os.environ, **env},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )

    reference = script({"COMPLETE": shell})
    clicks = script({"_OVERBRAINER_COMPLETE": f"{shell}_source"})
    assert reference.returncode == clicks.returncode == 0
    assert reference.stdout == clicks.stdout
    assert "_OVERBRAINER_COMPLETE" in reference.stdout


def test_another_complete_value_is_not_ours(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "overbrainer", "--version"],
        env={**os.environ, "COMPLETE": "1"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "overbrainer, version 0.1.0\n")


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completes_topics_through_the_sourced_script(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    script = (
        "source <(COMPLETE=bash overbrainer)\n"
        'COMP_WORDS=(overbrainer answers --topic "o"); COMP_CWORD=3\n'
        "_overbrainer_completion overbrainer\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    done = subprocess.run(
        ["bash", "-c", script],
        env={**os.environ, "PATH": path},
        cwd=root,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "ownership\n"), done.stderr
