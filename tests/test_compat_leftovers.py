"""Compatibility leftovers, through the real command: what the reference says, we say."""

from __future__ import annotations

from pathlib import Path

from tests.pipeline_support import make_project, overbrainer


async def test_a_dotenv_value_with_a_space_is_a_syntax_error_naming_its_line(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    (root / ".env").write_text("# keys\nA=1\nK=two words\n")
    result = await overbrainer(root, "config", "check", url="http://127.0.0.1:9/v1")
    assert result.code == 2
    assert result.stdout == ""
    assert result.stderr == "error: cannot parse .env (syntax error at line 3)\n"
