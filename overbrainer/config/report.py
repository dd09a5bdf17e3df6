"""The lines `config check` prints: one fact per line, environment values marked, secrets masked."""

from __future__ import annotations

from collections.abc import Mapping

from overbrainer.config.dialects import DialectSource
from overbrainer.config.env import SSH_CLIENT_ENV
from overbrainer.config.errors import ConfigError
from overbrainer.config.secrets import Secret
from overbrainer.config.settings import (
    DEFAULT_IMAGE,
    DEFAULT_RUNPOD_IMAGE,
    DEFAULT_RUNPOD_VENV,
    DEFAULT_WORKDIR,
    Engine,
    LocalTarget,
    Pipeline,
    Provider,
    RunpodTarget,
    Runtime,
    Settings,
    SshClient,
    SshTarget,
    Target,
)

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


def _number(value: float) -> str:
    """A number as the reference prints it: `6`, `0.5`, never `6.0`."""
    text = repr(float(value))
    return text.removesuffix(".0")


NOT_CHECKED = "not checked"
"""The `axolotl` of a target that `config check` did not look for (SSH: it does not connect)."""


def _runtime(target: LocalTarget | SshTarget, axolotl: str | None = NOT_CHECKED) -> str:
    if target.runtime is Runtime.DOCKER:
        return f"{(target.engine or Engine.DOCKER).value} {target.image or DEFAULT_IMAGE}"
    if axolotl is None:
        where = f"in venv {target.venv}" if target.venv else "on PATH"
        return f"native, no axolotl {where}"
    if axolotl != NOT_CHECKED:
        return f"native, axolotl at {axolotl}"
    return f"native, venv {target.venv or '(axolotl on PATH)'}"


def _runpod(target: RunpodTarget) -> str:
    limits = []
    if target.min_vram_gb is not None:
        limits.append(f"at least {target.min_vram_gb} GB")
    if target.max_price_per_hour is not None:
        limits.append(f"at most ${_number(target.max_price_per_hour)}/h per GPU")
    within = f" ({', '.join(limits)})" if limits else ""
    cost = "" if target.max_cost_usd is None else f", max ${_number(target.max_cost_usd)}"
    grows = "" if target.max_volume_gb is None else f" (grows up to {target.max_volume_gb} GB)"
    centers = target.data_center_ids
    return (
        f"runpod {target.gpu_count}x [{target.gpu_types}]{within}, "
        f"max {_number(target.max_hours)}h{cost}, "
        f"image {target.image or DEFAULT_RUNPOD_IMAGE}, venv {target.venv or DEFAULT_RUNPOD_VENV}, "
        f"disk {target.container_disk_gb} GB, boot grace {target.boot_grace_minutes} min, "
        f"retrieve grace {target.retrieve_grace_minutes} min, "
        f"data centers {centers if centers.auto or centers.items else 'any'}, "
        f"network volume {target.network_volume_id or 'none'}{grows}"
    )


def target_summary(target: Target, axolotl: str | None = NOT_CHECKED) -> str:
    """A target on one line with its defaults applied, as the reference prints it; a native
    target's `axolotl` path when it was looked for (None: not found)."""
    if isinstance(target, LocalTarget):
        return f"local, {_runtime(target, axolotl)}"
    if isinstance(target, SshTarget):
        host = target.host or "(host unset)"
        return f"ssh {host} in {target.workdir or DEFAULT_WORKDIR}, {_runtime(target, axolotl)}"
    if isinstance(target, RunpodTarget):
        return _runpod(target)
    return str(target.kind)  # a kind registered by targets/registry.py


def ssh_client_line(target: SshTarget | RunpodTarget, ssh_client_env: str | None) -> str:
    """The SSH client the target will use, and `(OVERBRAINER_SSH_CLIENT)` when that chose it."""
    chosen = (ssh_client_env or "").strip().lower()
    if chosen and chosen not in {client.value for client in SshClient}:
        raise ConfigError(f"{SSH_CLIENT_ENV}: must be openssh or builtin")
    return f"{chosen} ({SSH_CLIENT_ENV})" if chosen else target.ssh_client.value


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
            lines.append(mark(f"{key} = {_number(provider.batch_discount)}", key))
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
        summary = target_summary(target, found.get(name, NOT_CHECKED))
        lines.append(mark(f"targets.{name} = {summary}", f"targets.{name}"))
        if isinstance(target, SshTarget | RunpodTarget):
            client = ssh_client_line(target, ssh_client_env)
            key = f"targets.{name}.ssh_client"
            lines.append(mark(f"{key} = {client}", key))
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
