"""Write a new project: config, env example, prompt templates, .gitignore, format version."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from overbrainer.model.errors import UsageError
from overbrainer.project.directory import CONFIG_FILE, FORMAT_VERSION, Project
from overbrainer.project.presets import Preset, preset_config, preset_env_example
from overbrainer.project.templates import TEMPLATE_FILES, default_text
from overbrainer.storage import write_atomic

GITIGNORE_ENTRIES = (".env", "/data/", "/runs/", "/.overbrainer/")


def _packaged(name: str) -> str:
    return (resources.files("overbrainer") / "templates" / name).read_text(encoding="utf-8")


def _gitignore_text(existing: str | None) -> str | None:
    if existing is None:
        return "".join(f"{entry}\n" for entry in GITIGNORE_ENTRIES)
    present = {line.strip() for line in existing.splitlines()}
    missing = [entry for entry in GITIGNORE_ENTRIES if entry not in present]
    if not missing:
        return None
    prefix = existing if existing == "" or existing.endswith("\n") else existing + "\n"
    return prefix + "".join(f"{entry}\n" for entry in missing)


DEMO_CONFIG = "demo.toml"
"""The packaged configuration of `init --demo`: one small topic on the embedded stand-in."""


def init_project(root: Path, *, demo: bool = False, preset: Preset | None = None) -> list[Path]:
    """Create the project files in `root` (made if missing); refuses, writing nothing, over one.

    `demo` writes a configuration that runs offline on the embedded stand-in provider; `preset`
    one for that kind of provider (its dialect, base URL and models) instead of OpenRouter.
    """
    project = Project(root)
    config = _packaged(DEMO_CONFIG if demo else CONFIG_FILE)
    env_example = _packaged("env.example")
    if preset is not None:
        config = preset_config(config, preset)
        env_example = preset_env_example(env_example, preset)
    planned: list[tuple[Path, str]] = [
        (project.config, config),
        (root / ".env.example", env_example),
    ]
    planned += [(project.prompts / name, default_text(name)) for name in TEMPLATE_FILES]
    for path, _ in planned:
        if path.exists():
            raise UsageError(f"{path} already exists")
    planned.append((project.version_file, f"{FORMAT_VERSION}\n"))
    gitignore = root / ".gitignore"
    written: list[Path] = []
    try:
        existing = gitignore.read_text(encoding="utf-8") if gitignore.exists() else None
        root.mkdir(parents=True, exist_ok=True)
        project.prompts.mkdir(exist_ok=True)
        project.state.mkdir(exist_ok=True)
        for path, text in planned:
            write_atomic(path, text)
            written.append(path)
        if (ignore_text := _gitignore_text(existing)) is not None:
            write_atomic(gitignore, ignore_text)
            written.insert(-1, gitignore)
    except OSError as error:
        # A half-written project would make the next `init` refuse; take back what was written.
        for path in written:
            path.unlink(missing_ok=True)
        raise UsageError(f"cannot write the project in {root}: {error.strerror}") from None
    return written
