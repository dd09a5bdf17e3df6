"""Bad arguments and bad project files through the real command: one `error:` line, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from overbrainer.devtools.stub_provider import open_stub
from tests.pipeline_support import make_project, write_questions
from tests.pipeline_support import overbrainer as run_command
from tests.test_bad_input import snapshot


def overbrainer(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real command to its end (none of these reach a provider)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    return subprocess.run(
        [sys.executable, "-m", "overbrainer", *args],
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("run", "--topic", "x"), "error: No such option '--topic'; see `overbrainer run --help`"),
        (
            ("answers", "--max-cost", "-1"),
            "error: Invalid value for '--max-cost': -1.0 is not in the range x>=0.0; "
            "see `overbrainer answers --help`",
        ),
        (
            ("run", "--max-cost", "abc"),
            "error: Invalid value for '--max-cost': 'abc' is not a valid float range; "
            "see `overbrainer run --help`",
        ),
        (("split", "--force"), "error: No such option '--force'; see `overbrainer split --help`"),
        (("nosuch",), "error: No such command 'nosuch'; see `overbrainer --help`"),
    ],
)
def test_a_bad_argument_is_one_error_line(tmp_path: Path, args: tuple[str, ...], line: str) -> None:
    make_project(tmp_path)
    done = overbrainer("-C", str(tmp_path), *args)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", line + "\n")
    assert not (tmp_path / "data").exists()


def test_help_and_version_still_exit_0() -> None:
    assert overbrainer("--version").returncode == 0
    helped = overbrainer("run", "--help")
    assert (helped.returncode, helped.stdout.splitlines()[0]) == (
        0,
        "Usage: overbrainer run [OPTIONS]",
    )


def test_a_missing_project_directory(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    done = overbrainer("-C", str(missing), "run")
    assert (done.returncode, done.stderr) == (
        2,
        f"error: cannot read {missing}/overbrainer.toml: No such file or directory; "
        f"{missing} does not exist: make a project there with `overbrainer init {missing}`\n",
    )
    assert not missing.exists()


def test_a_toml_cut_short_names_the_end_of_the_file(tmp_path: Path) -> None:
    make_project(tmp_path)
    config = tmp_path / "overbrainer.toml"
    lines = config.read_text().count("\n")
    config.write_text(config.read_text() + "extra = [")
    done = overbrainer("-C", str(tmp_path), "config", "check")
    assert (done.returncode, done.stderr) == (
        2,
        "error: invalid configuration: TOML syntax error in overbrainer.toml "
        f"at line {lines + 1}, column 10\n",
    )


def test_a_bad_env_value_names_the_key_not_the_value(tmp_path: Path) -> None:
    make_project(tmp_path)
    done = overbrainer(
        "-C", str(tmp_path), "run", env={"OVERBRAINER_PIPELINE__CONCURRENCY": "abc-secret"}
    )
    assert done.returncode == 2
    assert "abc-secret" not in done.stderr
    assert done.stderr == (
        "error: invalid configuration: `pipeline.concurrency` has the wrong type, "
        "expected an integer (from OVERBRAINER_PIPELINE__CONCURRENCY)\n"
    )


async def test_a_bad_rejected_line_stops_force_before_it_rewrites(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 2, topics=("ownership", "async"))
    data = root / "data"
    (data / "rejected.jsonl").write_text("not a record\n")
    before = snapshot(root)
    async with open_stub() as stub:
        for stage in ("subtopics", "questions"):
            result = await run_command(root, stage, "--force", url=stub.url)
            assert (result.code, result.stdout) == (2, "")
            assert result.stderr.splitlines()[-1] == (
                f"error: {data / 'rejected.jsonl'}:1: invalid record: "
                "not JSON: Expecting value: line 1 column 1 (char 0)"
            )
        assert stub.completions == []
    # Nothing written: no data, no force state, no history line.
    assert snapshot(root) == before


@pytest.mark.parametrize("command", [("config", "check"), ("split",), ("run",), ("answers",)])
def test_a_config_that_is_not_utf8_is_one_line_naming_the_byte(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    root = make_project(tmp_path)
    config = root / "overbrainer.toml"
    good = config.read_bytes()
    config.write_bytes(good + b"# caf\xe9 in Latin-1\n")
    done = overbrainer("-C", str(root), *command)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"error: {config}: not valid UTF-8 at byte {len(good) + 5}\n"
    assert config.read_bytes() == good + b"# caf\xe9 in Latin-1\n"
    assert not (root / "data").exists()


def test_a_dotenv_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    (root / ".env").write_bytes(b"OPENROUTER_KEY=\xff\n")
    done = overbrainer("-C", str(root), "config", "check")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"error: {root / '.env'}: not valid UTF-8 at byte 15\n"


async def test_a_template_that_is_not_utf8_stops_the_stage_before_any_request(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 2)
    template = root / "prompts" / "answer_system.txt"
    template.parent.mkdir(exist_ok=True)
    template.write_bytes(b"You are an expert in {{ topic }} \xe0 la carte.\n")
    async with open_stub() as stub:
        result = await run_command(root, "answers", url=stub.url)
        assert stub.completions == []
    assert (result.code, result.stdout) == (2, "")
    assert result.stderr.splitlines()[-1] == f"error: {template}: not valid UTF-8 at byte 33"
    assert not (root / "data" / "answers.jsonl").exists()
