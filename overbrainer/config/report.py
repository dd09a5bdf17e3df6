"""The lines `config check` prints: one fact per line, environment values marked, secrets masked."""

from __future__ import annotations

from overbrainer.config.secrets import Secret
from overbrainer.config.settings import Pipeline, Settings

ENV_MARK = "  (env)"


def _secret(secret: Secret | None) -> str:
    return "(unset)" if secret is None else "***"


def _pipeline_line(pipeline: Pipeline) -> str:
    def word(value: object) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if value is None:
            return "None"
        return str(value)

    fields = ", ".join(
        f"{attribute.name}: {word(getattr(pipeline, attribute.name))}"
        for attribute in Pipeline.__attrs_attrs__
        if attribute.name not in OWN_PIPELINE_KEYS
    )
    return f"pipeline = Pipeline {{ {fields} }}"


# Our own [pipeline] keys: the `pipeline = Pipeline { … }` line keeps the reference's exact
# fields, and each of these gets a line of its own, only when set to other than its default.
OWN_PIPELINE_KEYS = ("max_cost_usd", "drain_secs")


def _own_pipeline_lines(pipeline: Pipeline) -> list[tuple[str, str]]:
    default = Pipeline()
    return [
        (f"pipeline.{key} = {getattr(pipeline, key)}", f"pipeline.{key}")
        for key in OWN_PIPELINE_KEYS
        if getattr(pipeline, key) != getattr(default, key)
    ]


def report_lines(settings: Settings) -> list[str]:
    """The resolved configuration by section, as `config check` prints it."""
    env = settings.from_env

    def mark(line: str, *keys: str) -> str:
        hit = any(k in env or any(e.startswith(k + ".") for e in env) for k in keys)
        return line + ENV_MARK if hit else line

    lines = [mark(f"project.name = {settings.project.name}", "project.name")]
    for topic in settings.topics:
        lines.append(
            f"topics.{topic.name} = {topic.subtopics} subtopics x "
            f"{topic.questions_per_subtopic} questions"
        )
    for name, provider in settings.providers.items():
        prefix = f"providers.{name}"
        lines.append(
            mark(
                f"{prefix}.protocol = {provider.protocol.value.capitalize()}", f"{prefix}.protocol"
            )
        )
        lines.append(
            mark(f"{prefix}.base_url = {provider.base_url or '(unset)'}", f"{prefix}.base_url")
        )
        lines.append(mark(f"{prefix}.api_key = {_secret(provider.api_key)}", f"{prefix}.api_key"))
    for role_name, role in settings.roles.all():
        key = f"roles.{role_name}"
        reasoning = "true" if role.reasoning else "false"
        lines.append(
            mark(
                f"{key} = {role.provider}/{role.model} "
                f"(reasoning: {reasoning}, max_tokens: {role.max_tokens})",
                key,
            )
        )
    lines.append(mark(_pipeline_line(settings.pipeline), "pipeline"))
    lines.extend(mark(line, key) for line, key in _own_pipeline_lines(settings.pipeline))
    if settings.training is not None:
        training = settings.training
        lines.append(
            mark(
                f"training = {training.base_model} on {training.target} "
                f"({training.adapter.value.capitalize()})",
                "training",
            )
        )
    for name, target in settings.targets.items():
        lines.append(mark(f"targets.{name} = {target.kind}", f"targets.{name}"))
    if settings.metrics.listen is not None:
        lines.append(mark(f"metrics.listen = {settings.metrics.listen}", "metrics.listen"))
    lines.append(mark(f"runpod.api_key = {_secret(settings.runpod.api_key)}", "runpod.api_key"))
    lines.append(mark(f"runpod.base_url = {settings.runpod.url}", "runpod.base_url"))
    lines.append(mark(f"hf_token = {_secret(settings.hf_token)}", "hf_token"))
    return lines


def secrets_of(settings: Settings) -> list[tuple[str, Secret]]:
    """Every secret the configuration holds, with its key, in report order."""
    found = [
        (f"providers.{name}.api_key", provider.api_key)
        for name, provider in settings.providers.items()
        if provider.api_key is not None
    ]
    if settings.runpod.api_key is not None:
        found.append(("runpod.api_key", settings.runpod.api_key))
    if settings.hf_token is not None:
        found.append(("hf_token", settings.hf_token))
    return found
