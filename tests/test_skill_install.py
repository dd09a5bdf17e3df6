"""`overbrainer skill install`: where it writes, and never over an edited skill without --force."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from overbrainer import __version__
from overbrainer.cli.skill_command import bundled_skill
from tests.pipeline_support import make_project


def skill(cwd: Path, *args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    if home is not None:
        env["HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "overbrainer", "-C", str(cwd), "skill", "install", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_the_project_skill_is_installed_then_up_to_date(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    (root / "data").mkdir()
    target = root / ".claude" / "skills" / "overbrainer" / "SKILL.md"
    first = skill(root / "data")  # found from a directory inside the project, as git does
    assert (first.returncode, first.stdout) == (0, f"installed {target}\n")
    assert target.read_text(encoding="utf-8") == bundled_skill()
    again = skill(root)
    assert (again.returncode, again.stdout) == (0, f"{target} is up to date\n")


def test_an_edited_skill_is_kept_unless_forced(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    target = root / ".claude" / "skills" / "overbrainer" / "SKILL.md"
    target.parent.mkdir(parents=True)
    target.write_text("my own notes\n", encoding="utf-8")
    refused = skill(root)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1] == (
        f"error: {target} differs from the skill of overbrainer {__version__}; "
        "use --force to replace it"
    )
    assert target.read_text(encoding="utf-8") == "my own notes\n"
    forced = skill(root, "--force")
    assert (forced.returncode, forced.stdout) == (0, f"replaced {target}\n")
    assert target.read_text(encoding="utf-8") == bundled_skill()


def test_global_and_dir_places(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = skill(tmp_path, "--global", home=home)
    assert done.returncode == 0, done.stderr
    assert (home / ".claude" / "skills" / "overbrainer" / "SKILL.md").is_file()
    other = tmp_path / "agent-skills"
    done = skill(tmp_path, "--dir", str(other))
    assert (done.returncode, done.stdout) == (
        0,
        f"installed {other / 'overbrainer' / 'SKILL.md'}\n",
    )
    both = skill(tmp_path, "--global", "--dir", str(other), home=home)
    assert both.returncode == 2
    assert "--global and --dir cannot be used together" in both.stderr


def test_the_bundled_skill_names_the_rules_an_agent_must_keep() -> None:
    text = bundled_skill()
    assert text.startswith("---\nname: overbrainer\ndescription: ")
    for rule in ("Never read, print or edit `.env`", "Ask before spending money", "pod rm"):
        assert rule in text
