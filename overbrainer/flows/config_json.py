"""The `config check --json` document's parts: per role and per target the facts its lines give.

The problems are the lines the text prints last; a role or target gets those that name its key
(`roles.parent`, `targets.gpu`), so a script finds what is wrong with each without parsing."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from overbrainer.config.report import ENV_MARK, target_summary
from overbrainer.config.settings import Settings
from overbrainer.config.target_settings import NOT_CHECKED
from overbrainer.llm import RoleCheck, role_key
from overbrainer.model.json_values import JsonValue


def setting_json(line: str) -> dict[str, JsonValue]:
    """A line of the report as `{"key", "value", "env"}`: `key = value`, `pipeline: …`, and
    whether the environment set it (the text's `(env)`)."""
    env = line.endswith(ENV_MARK)
    text = line.removesuffix(ENV_MARK)
    key, sep, value = text.partition(" = ")
    if not sep:
        key, _, value = text.partition(": ")
    return {"key": key, "value": value, "env": env}


def naming(problems: Sequence[str], key: str) -> list[JsonValue]:
    """The problem lines that name `key` as a whole word (`roles.parent`, not `roles.parentx`)."""
    pattern = re.compile(rf"(?<![\w.]){re.escape(key)}(?![\w])")
    return [problem for problem in problems if pattern.search(problem)]


def roles_json(
    settings: Settings, problems: Sequence[str], checks: Sequence[RoleCheck] | None
) -> dict[str, JsonValue]:
    """Each configured role (the `[quality] judge` as `quality.judge`): its model, the
    problems naming it, and with `--online` its provider's verdict."""
    configured = [(role_key(name), role) for name, role in settings.roles.all()]
    if settings.quality.judge is not None:
        configured.append(("quality.judge", settings.quality.judge))
    verdicts = {role_key(check.name): check for check in checks or ()}
    found: dict[str, JsonValue] = {}
    for key, role in configured:
        verdict = verdicts.get(key)
        online: JsonValue = None
        if verdict is not None:
            online = {"works": verdict.works, "line": verdict.line}
        mine = naming(problems, key)
        found[key] = {
            "provider": role.provider,
            "model": role.model,
            "reasoning": role.reasoning,
            "max_tokens": role.max_tokens,
            "batch": role.batch,
            "ok": not mine and (verdict is None or verdict.works),
            "problems": mine,
            "online": online,
        }
    return found


def targets_json(
    settings: Settings, problems: Sequence[str], trainers: Mapping[str, str | None]
) -> dict[str, JsonValue]:
    """Each `[targets.NAME]`: its kind, its line, whether it trains the project, its `axolotl`
    when looked for (`axolotl_checked`), and the problems naming it."""
    training = None if settings.training is None else settings.training.target
    found: dict[str, JsonValue] = {}
    for name, target in settings.targets.items():
        checked = name in trainers
        axolotl = trainers.get(name)
        mine = naming(problems, f"targets.{name}")
        found[name] = {
            "kind": target.kind,
            "summary": target_summary(target, axolotl if checked else NOT_CHECKED),
            "training": name == training,
            "axolotl_checked": checked,
            "axolotl": axolotl,
            "ok": not mine,
            "problems": mine,
        }
    return found


def secrets_json(results: Sequence[tuple[str, str | None]]) -> list[JsonValue]:
    """`--resolve`: each secret's key, whether it resolved, and why not."""
    return [
        {"key": key, "resolved": problem is None, "problem": problem} for key, problem in results
    ]
