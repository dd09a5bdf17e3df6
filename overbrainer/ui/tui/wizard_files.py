"""The init wizard's answers as project files: overbrainer.toml, .env, and `init`'s others."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import attrs

from overbrainer.config import load_settings
from overbrainer.config.settings import Settings
from overbrainer.model.errors import OverbrainerError, UsageError
from overbrainer.project.directory import CONFIG_FILE, Project
from overbrainer.project.init import init_project
from overbrainer.project.templates import TEMPLATE_FILES
from overbrainer.storage import write_atomic

ENV_FILE = ".env"
EXAMPLE_HEADER = (
    "# The variables of .env, without their secrets. .env is read at start-up and never\n"
    "# overrides the shell. A key can be a Vault/OpenBao reference: vault:path#field.\n"
)
DEFAULT_SUBTOPICS = 10
DEFAULT_QUESTIONS = 30


@attrs.frozen
class TopicAnswer:
    """A topic of the wizard's step 5."""

    name: str
    subtopics: int = DEFAULT_SUBTOPICS
    questions: int = DEFAULT_QUESTIONS
    description: str = ""


@attrs.frozen
class Answers:
    """What the wizard asked, ready to write."""

    name: str
    provider: str
    protocol: str
    base_url: str
    api_key: str = attrs.field(repr=False)
    generator: str
    parent: str
    reasoning: bool
    embedder: str
    topics: tuple[TopicAnswer, ...]
    training: str = "skip"
    """skip, local, ssh or runpod."""
    runtime: str = "native"
    ssh_host: str = ""
    runpod_key: str = attrs.field(default="", repr=False)
    gpu_types: str = "auto"
    base_model: str = "Qwen/Qwen3-4B"
    adapter: str = "qlora"
    max_cost_usd: float | None = None
    """`[pipeline] max_cost_usd`, the spend cap; None: no cap."""


TARGET_NAMES = {"local": "local", "ssh": "gpu_box", "runpod": "cloud"}


def _q(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text, ensure_ascii=False)


def config_text(answers: Answers) -> str:
    """overbrainer.toml for `answers` (no URL, host or secret: those go to .env)."""
    p = answers.provider
    lines = [
        "# overbrainer project configuration, written by `overbrainer tui`'s wizard.",
        "# URLs, hosts and secrets are in .env (see .env.example).",
        "",
        "[project]",
        f"name = {_q(answers.name)}",
    ]
    for topic in answers.topics:
        lines += [
            "",
            "[[topics]]",
            f"name = {_q(topic.name)}",
            *([f"description = {_q(topic.description)}"] if topic.description else []),
            f"subtopics = {topic.subtopics}",
            f"questions_per_subtopic = {topic.questions}",
        ]
    lines += ["", f"[providers.{p}]", f"protocol = {_q(answers.protocol)}"]
    lines += ["", "[roles.generator]", f"provider = {_q(p)}", f"model = {_q(answers.generator)}"]
    lines += ["", "[roles.parent]", f"provider = {_q(p)}", f"model = {_q(answers.parent)}"]
    lines.append(f"reasoning = {'true' if answers.reasoning else 'false'}")
    if answers.embedder:
        lines += ["", "[roles.embedder]", f"provider = {_q(p)}", f"model = {_q(answers.embedder)}"]
    if answers.max_cost_usd is not None:
        lines += ["", "[pipeline]", f"max_cost_usd = {answers.max_cost_usd!r}"]
    if answers.training != "skip":
        target = TARGET_NAMES[answers.training]
        lines += [
            "",
            "[training]",
            f"target = {_q(target)}",
            f"base_model = {_q(answers.base_model)}",
            f"adapter = {_q(answers.adapter)}",
            "",
            f"[targets.{target}]",
        ]
        if answers.training == "runpod":
            gpus = answers.gpu_types.strip() or "auto"
            listed = [g.strip() for g in gpus.split(",") if g.strip()]
            value = _q("auto") if gpus == "auto" else "[" + ", ".join(map(_q, listed)) + "]"
            lines += ['kind = "runpod"', f"gpu_types = {value}", "max_hours = 4"]
        else:
            lines += [f"kind = {_q(answers.training)}", f"runtime = {_q(answers.runtime)}"]
    return "\n".join(lines) + "\n"


def env_text(answers: Answers) -> str:
    """.env for `answers`: the provider's URL and key, the SSH host, the Runpod key."""
    p = answers.provider.upper()
    lines = [
        f"OVERBRAINER_PROVIDERS__{p}__BASE_URL={answers.base_url}",
        f"OVERBRAINER_PROVIDERS__{p}__API_KEY={answers.api_key}",
    ]
    if answers.training == "ssh" and answers.ssh_host:
        lines.append(f"OVERBRAINER_TARGETS__GPU_BOX__HOST={answers.ssh_host}")
    if answers.training == "runpod" and answers.runpod_key:
        lines.append(f"OVERBRAINER_RUNPOD__API_KEY={answers.runpod_key}")
    return "\n".join(lines) + "\n"


def existing_files(root: Path) -> list[Path]:
    """The files the wizard would write that exist already (it never overwrites one)."""
    project = Project(root)
    paths = [project.config, root / ENV_FILE, root / ".env.example"]
    paths += [project.prompts / name for name in TEMPLATE_FILES]
    return [path for path in paths if path.exists()]


def settings_of(answers: Answers) -> Settings:
    """The settings `answers` make, loaded as `config check` loads them (ConfigError if not).

    Blocking: it writes and reads a scratch folder.
    """
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / CONFIG_FILE).write_text(config_text(answers), encoding="utf-8")
        (folder / ENV_FILE).write_text(env_text(answers), encoding="utf-8")
        shell = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
        return load_settings(folder, shell)


def check_answers(answers: Answers) -> str | None:
    """The configuration's problem as `config check` would name it, or None when it loads."""
    try:
        settings_of(answers)
    except OverbrainerError as error:
        return error.message
    return None


def write_project(root: Path, answers: Answers) -> list[Path]:
    """Write the project as `init` does, with the answers' config and a .env of mode 600."""
    problem = check_answers(answers)
    if problem is not None:
        raise UsageError(problem)
    env = root / ENV_FILE
    if env.exists():
        raise UsageError(f"{env} already exists")
    written = init_project(root)
    write_atomic(Project(root).config, config_text(answers))
    blank = attrs.evolve(answers, api_key="", runpod_key="")
    write_atomic(root / ".env.example", EXAMPLE_HEADER + env_text(blank))
    fd = os.open(env, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(env_text(answers))
    return [*written, env]
