"""The lines `config check` prints: one fact per line, environment values marked, secrets masked."""

from __future__ import annotations

from collections.abc import Mapping

from overbrainer.config.dialects import DialectSource
from overbrainer.config.env import SSH_CLIENT_ENV
from overbrainer.config.errors import ConfigError
from overbrainer.config.secrets import Secret
from overbrainer.config.settings import Pipeline, Provider, Settings, SshClient
from overbrainer.config.target_settings import NOT_CHECKED, Shown, TargetSettings, settings_kind

ENV_MARK = "  (env)"


def _secret(secret: Secret | None) -> str:
    # An empty key is no secret, and `***` would make it look set: it is used as no key.
    if secret is None:
        return "(unset)"
    return "(empty)" if not secret.text.strip() else "***"


def shown_url(url: str) -> str:
    """`url` with any `user:password@` replaced by `***@`: userinfo is a credential."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, path = rest.partition("/")
    if "@" not in authority:
        return url
    return f"{scheme}://***@{authority.rpartition('@')[2]}{slash}{path}"


def _pipeline_line(pipeline: Pipeline) -> str:
    def word(value: object) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    fields = ", ".join(
        f"{attribute.name} {word(getattr(pipeline, attribute.name))}"
        for attribute in Pipeline.__attrs_attrs__
        if attribute.name not in OWN_PIPELINE_KEYS
    )
    return f"pipeline: {fields}"


# Our own [pipeline] keys: the `pipeline: …` line keeps the reference's fields, and each of
# these gets a line of its own, only when set to other than its default.
OWN_PIPELINE_KEYS = (
    "max_cost_usd",
    "drain_secs",
    "adaptive",
    "adaptive_decrease",
    "adaptive_pause_secs",
    "adaptive_window_secs",
    "batch_poll_secs",
)


def _own_pipeline_lines(pipeline: Pipeline) -> list[tuple[str, str]]:
    default = Pipeline()
    return [
        (f"pipeline.{key} = {getattr(pipeline, key)}", f"pipeline.{key}")
        for key in OWN_PIPELINE_KEYS
        if getattr(pipeline, key) != getattr(default, key)
    ]


def plain_number(value: float) -> str:
    """A number as the reference prints it: `6`, `0.5`, never `6.0`."""
    text = repr(float(value))
    return text.removesuffix(".0")


def target_summary(target: TargetSettings, axolotl: str | None = NOT_CHECKED) -> str:
    """A target on one line with its defaults applied, as the reference prints it; a native
    target's `axolotl` path when it was looked for (None: not found)."""
    return dict(settings_kind(target).summary(target, Shown(axolotl)))[""]


def ssh_client_line(configured: SshClient, ssh_client_env: str | None) -> str:
    """The SSH client a target will use, and `(OVERBRAINER_SSH_CLIENT)` when that chose it."""
    chosen = (ssh_client_env or "").strip().lower()
    if chosen and chosen not in {client.value for client in SshClient}:
        raise ConfigError(f"{SSH_CLIENT_ENV}: must be openssh or builtin")
    return f"{chosen} ({SSH_CLIENT_ENV})" if chosen else configured.value


def deprecation_warnings(settings: Settings) -> list[str]:
    """Keys that still work but are on their way out, each with what to do instead."""
    if settings.training is not None and settings.training.hub_model_id is not None:
        return [
            "training.hub_model_id is deprecated: set [hub] repo instead "
            "(`overbrainer migrate` moves it)"
        ]
    return []


def dialect_summary(provider: Provider) -> str:
    """The provider's dialect and how it was chosen: `openai`, `openrouter (detected from the
    base URL)`, `openai-compatible (the openai protocol's default)`."""
    name = provider.spec.dialect.value
    source = provider.dialect_source
    if source is DialectSource.SET:
        return name
    if source is DialectSource.DETECTED:
        return f"{name} ({source.value})"
    return f"{name} (the {provider.protocol.value} protocol's default)"


def report_lines(
    settings: Settings,
    ssh_client_env: str | None = None,
    axolotl: Mapping[str, str | None] | None = None,
) -> list[str]:
    """The resolved configuration by section, as `config check` prints it.

    `axolotl`: the path of each checked target's `axolotl` (None: not found)."""
    found = axolotl or {}
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
        lines.append(mark(f"{prefix}.protocol = {provider.protocol.value}", f"{prefix}.protocol"))
        lines.append(mark(f"{prefix}.dialect = {dialect_summary(provider)}", f"{prefix}.dialect"))
        lines.append(
            mark(
                f"{prefix}.base_url = {shown_url(provider.base_url or '(unset)')}",
                f"{prefix}.base_url",
            )
        )
        lines.append(mark(f"{prefix}.api_key = {_secret(provider.api_key)}", f"{prefix}.api_key"))
        if provider.batch_discount is not None:  # ours: a line only when set
            key = f"{prefix}.batch_discount"
            lines.append(mark(f"{key} = {plain_number(provider.batch_discount)}", key))
        if provider.batch_api is not None:
            key = f"{prefix}.batch_api"
            lines.append(mark(f"{key} = {provider.batch_api.value}", key))
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
        if role.batch:  # ours: a line only when set
            lines.append(mark(f"{key}.batch = true", f"{key}.batch"))
    lines.append(mark(_pipeline_line(settings.pipeline), "pipeline"))
    lines.extend(mark(line, key) for line, key in _own_pipeline_lines(settings.pipeline))
    if settings.training is not None:
        training = settings.training
        lines.append(
            mark(
                f"training = {training.base_model} on {training.target} ({training.adapter.value})",
                "training",
            )
        )
    for name, target in settings.targets.items():
        shown = Shown(found.get(name, NOT_CHECKED), ssh_client_env)
        for suffix, value in settings_kind(target).summary(target, shown):
            key = f"targets.{name}{suffix}"
            lines.append(mark(f"{key} = {value}", key))
    if settings.metrics.listen is not None:
        lines.append(mark(f"metrics.listen = {settings.metrics.listen}", "metrics.listen"))
    lines.append(mark(f"runpod.api_key = {_secret(settings.runpod.api_key)}", "runpod.api_key"))
    lines.append(mark(f"runpod.base_url = {shown_url(settings.runpod.url)}", "runpod.base_url"))
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
