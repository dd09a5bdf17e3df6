"""`.env`: read into the environment without overriding the shell, its errors naming a line only."""

from __future__ import annotations

from pathlib import Path

import pytest

from overbrainer.config.load import load_settings
from overbrainer.model.text import NotUtf8
from tests.config_support import failure, write


def test_dotenv_fills_the_environment_without_overriding_the_shell(tmp_path: Path) -> None:
    dotenv = (
        "\ufeff# comment\n"
        "OVERBRAINER_PIPELINE__CONCURRENCY=9\n"
        "export OVERBRAINER_PIPELINE__SEED=7\n"
        "OVERBRAINER_PIPELINE__SEED=8\n"
        'VAULT_TOKEN="s.abc def"\n'
    )
    env = {"OVERBRAINER_PIPELINE__CONCURRENCY": "3"}
    cfg = load_settings(write(tmp_path, dotenv=dotenv), env)
    assert (cfg.pipeline.concurrency, cfg.pipeline.seed) == (3, 7)
    assert env["VAULT_TOKEN"] == "s.abc def"
    assert env["OVERBRAINER_PIPELINE__CONCURRENCY"] == "3"


def test_dotenv_keys_are_checked_like_the_shell(tmp_path: Path) -> None:
    message = failure(write(tmp_path, dotenv="OVERBRAINER_PIPELINE__WIDTH=2\n"), {})
    assert message == (
        "invalid configuration: unknown field `pipeline.width` (from OVERBRAINER_PIPELINE__WIDTH)"
    )


@pytest.mark.parametrize(
    ("dotenv", "line"),
    [
        ("A=1\nB=2\nsk-or-v1-SECRET\n", 3),
        ("A=1\nKEY VALUE=sk-SECRET\n", 2),
        ('X="sk-SECRET\n', 1),
        ("A=1\n# two words\nK=two words\n", 3),
        ("K=sk one # a comment\n", 1),
        ("export K=\ttab\tsk\n", 1),
    ],
)
def test_dotenv_syntax_error_names_the_line_only(tmp_path: Path, dotenv: str, line: int) -> None:
    message = failure(write(tmp_path, dotenv=dotenv), {})
    assert message == f"cannot parse .env (syntax error at line {line})"


@pytest.mark.parametrize(
    ("line", "value"),
    [
        ("K=one # a comment\n", "one"),
        ('K="two words"  # quoted\n', "two words"),
        ("K='two words'\n", "two words"),
        ("K=  padded  \n", "padded"),
        ("K=a#b\n", "a#b"),
    ],
)
def test_dotenv_values_the_reference_reads_alike_still_load(
    tmp_path: Path, line: str, value: str
) -> None:
    env: dict[str, str] = {}
    load_settings(write(tmp_path, dotenv=line), env)
    assert env["K"] == value


def test_dotenv_that_is_not_utf8_names_the_file_and_byte(tmp_path: Path) -> None:
    with pytest.raises(NotUtf8) as caught:
        load_settings(write(tmp_path, dotenv=b"A=1\nB=\xff\xfe secret\n"), {})
    assert caught.value.exit_code == 2
    assert caught.value.message == f"{tmp_path / '.env'}: not valid UTF-8 at byte 6"


def test_unreadable_dotenv(tmp_path: Path) -> None:
    write(tmp_path)
    (tmp_path / ".env").mkdir()
    assert failure(tmp_path, {}) == "cannot read .env: Is a directory"


def test_no_dotenv_is_fine(tmp_path: Path) -> None:
    env: dict[str, str] = {}
    load_settings(write(tmp_path), env)
    assert env == {}
