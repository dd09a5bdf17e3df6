"""`[targets.NAME] kind = "ray"`: where the cluster's Jobs API is, how to reach it, where the
job's files live, and how Axolotl spreads the training over the cluster."""

from __future__ import annotations

import math
import re
from typing import ClassVar

import attrs

from overbrainer.config.errors import ConfigError
from overbrainer.config.target_settings import RECONNECT_SECS, SettingsKind, Shown, TargetSettings
from overbrainer.llm import valid_header_value

DEFAULT_REQUEST_SECS = 30.0
SEEN_FILE = "ray.json"
"""Beside a job's local record: the cluster's last state of the job as a follower saw it
(`runs ls` reads it without asking the cluster)."""

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


@attrs.frozen
class RuntimeEnvExtras:
    """What the job's runtime env gets beyond the kind's own `working_dir` and variables."""

    env_vars: dict[str, str] = attrs.field(factory=dict)
    """Extra environment variables on the nodes (HF_HOME, NCCL settings, …)."""
    pip: list[str] = attrs.field(factory=list)
    """Extra packages the runtime env installs on the nodes (Ray's `runtime_env.pip`)."""
    worker_process_setup_hook: str | None = None
    """`module.function` every process of the job calls first (Ray's own key): a patch the
    trainer's workers need, shipped in the run's files or installed on the nodes."""


@attrs.frozen
class RayTarget:
    """`[targets.<n>] kind = "ray"`: a Ray cluster reached through its Jobs API (the dashboard's
    HTTP address: `ray start --head`'s, KubeRay's service, Anyscale's), jobs' files on
    `storage`."""

    address: str
    """The dashboard's URL, `http(s)://host:8265` (or a proxy's path before it)."""
    storage: str
    """Where the job's run directory lives, seen alike by every node and by overbrainer: a
    local/NFS path, or an fsspec URI (`s3://bucket/prefix`, `gs://…`)."""
    node_storage: str | None = None
    """Where the nodes see `storage` (a bucket's mount, an NFS mount point); default:
    `storage` itself, which must then be a path."""
    token_env: str | None = None
    """The environment variable holding the cluster's token (`Authorization: Bearer …`)."""
    headers: dict[str, str] = attrs.field(factory=dict)
    """Extra headers for a proxy in front of the dashboard (KubeRay's ingress, Anyscale)."""
    header_envs: dict[str, str] = attrs.field(factory=dict)
    """Extra headers whose values are secrets: header name → environment variable."""
    num_workers: int = 1
    """Axolotl's `ray_num_workers`: training processes Ray Train spreads over the cluster."""
    resources_per_worker: dict[str, float] = attrs.field(factory=lambda: {"GPU": 1.0})
    """Axolotl's `resources_per_worker` (`{GPU = 1}`, or `{CPU = 4}` on a CPU cluster)."""
    runtime_env: RuntimeEnvExtras = RuntimeEnvExtras()
    """Extras of the job's runtime env (`[targets.<n>.runtime_env] env_vars`, `pip`)."""
    request_secs: float = DEFAULT_REQUEST_SECS
    """How long one Jobs API request may take before the head counts as unreachable."""
    reconnect_secs: float = RECONNECT_SECS
    """How long a follower keeps asking an unreachable head before it gives the job up."""

    kind: ClassVar[str] = "ray"


def problems(name: str, target: RayTarget) -> list[str]:
    """What cannot work in the table, one line each naming `targets.NAME.key`."""
    key = f"targets.{name}"
    found: list[str] = []
    if not re.match(r"https?://[^/\s]+", target.address):
        found.append(f"{key}.address must be an http(s):// URL, not {target.address!r}")
    if not target.storage.strip():
        found.append(f"{key}.storage is empty: a shared path or a URI such as s3://bucket/runs")
    if target.node_storage is None and "://" in target.storage:
        found.append(f"{key}.node_storage is not set: say where the nodes mount {target.storage}")
    elif target.node_storage is not None and not target.node_storage.startswith("/"):
        found.append(f"{key}.node_storage must be an absolute path on the nodes")
    if target.token_env is not None and not ENV_NAME.fullmatch(target.token_env):
        found.append(f"{key}.token_env must be an environment variable's name")
    for header, value in target.headers.items():
        if not HEADER_NAME.fullmatch(header) or not valid_header_value(value):
            found.append(f"{key}.headers.{header} is not a valid HTTP header")
    for header, env in target.header_envs.items():
        if not HEADER_NAME.fullmatch(header):
            found.append(f"{key}.header_envs.{header} is not a valid HTTP header name")
        if not ENV_NAME.fullmatch(env):
            found.append(f"{key}.header_envs.{header} must name an environment variable")
    if target.num_workers < 1:
        found.append(f"{key}.num_workers must be 1 or more, not {target.num_workers}")
    for resource, share in target.resources_per_worker.items():
        if not math.isfinite(share) or share < 0:
            found.append(f"{key}.resources_per_worker.{resource} must be 0 or more")
    if not target.resources_per_worker:
        found.append(f"{key}.resources_per_worker is empty: say {{GPU = 1}} or {{CPU = N}}")
    for env in target.runtime_env.env_vars:
        if not ENV_NAME.fullmatch(env):
            found.append(f"{key}.runtime_env.env_vars.{env} is not a variable's name")
    for field, seconds in (
        ("request_secs", target.request_secs),
        ("reconnect_secs", target.reconnect_secs),
    ):
        if not math.isfinite(seconds) or seconds <= 0:
            found.append(f"{key}.{field} must be more than 0")
    return found


def summary(target: RayTarget) -> list[str]:
    """`config show`'s words for the table (never a secret: only the variables' names)."""
    lines = [
        f"ray cluster {target.address}, storage {target.storage}",
        f"{target.num_workers} worker(s), each {target.resources_per_worker}",
    ]
    if target.token_env:
        lines.append(f"token from ${target.token_env}")
    return lines


def _shown(target: TargetSettings, shown: Shown) -> list[tuple[str, str]]:
    first, *rest = summary(narrow(target))
    keys = (".num_workers", ".token_env")
    return [("", first), *zip(keys, rest, strict=False)]


def narrow(target: object) -> RayTarget:
    """The target's settings as the Ray kind's own class."""
    if not isinstance(target, RayTarget):
        raise ConfigError(f"a {getattr(target, 'kind', '?')} target is not a ray one")
    return target


RAY_SETTINGS = SettingsKind(
    name=RayTarget.kind,
    settings_type=RayTarget,
    summary=_shown,
    problems=lambda name, target: problems(name, narrow(target)),
    reconnect_secs=lambda target: narrow(target).reconnect_secs,
)
"""How config reads, checks and shows a ray target."""
