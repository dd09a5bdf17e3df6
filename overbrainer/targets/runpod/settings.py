"""`[targets.<n>] kind = "runpod"`: the pod's settings, their checks and `config show` line."""

from __future__ import annotations

import math
from typing import ClassVar

import attrs

from overbrainer.config.report import plain_number, ssh_client_line
from overbrainer.config.settings import (
    DEFAULT_RUNPOD_IMAGE,
    DEFAULT_RUNPOD_VENV,
    RECONNECT_SECS,
    ListOrAuto,
    SshClient,
)
from overbrainer.config.target_settings import SettingsKind, Shown, TargetSettings


@attrs.frozen
class RunpodTarget:
    """`[targets.<n>] kind = "runpod"`: a Runpod pod made for the run (reference-training §1.2)."""

    gpu_types: ListOrAuto
    max_hours: float
    min_vram_gb: int | None = None
    max_price_per_hour: float | None = None
    max_cost_usd: float | None = None
    gpu_count: int = 1
    image: str | None = None
    venv: str | None = None
    container_disk_gb: int = 50
    boot_grace_minutes: int = 30
    retrieve_grace_minutes: int = 60
    data_center_ids: ListOrAuto = attrs.field(factory=ListOrAuto)
    network_volume_id: str | None = None
    max_volume_gb: int | None = None
    ssh_client: SshClient = SshClient.OPENSSH
    reconnect_secs: float = RECONNECT_SECS
    """As for `ssh` targets (a pod deleted elsewhere is noticed once it is spent)."""

    kind: ClassVar[str] = "runpod"


def pod_settings(target: TargetSettings) -> RunpodTarget:
    """A target the registry said makes pods, as its Runpod settings."""
    assert isinstance(target, RunpodTarget), f"a {target.kind} target makes no pod"
    return target


def _problems(name: str, target: TargetSettings) -> list[str]:
    pod = pod_settings(target)
    out: list[str] = []
    if math.isnan(pod.max_hours) or pod.max_hours <= 0:
        out.append(f"targets.{name}.max_hours: must be greater than 0")
    elif pod.max_hours > 720:
        out.append(f"targets.{name}.max_hours: must be at most 720")
    if pod.gpu_count < 1:
        out.append(f"targets.{name}.gpu_count: must be at least 1")
    return out


def _ranges(name: str, target: TargetSettings) -> list[str]:
    pod = pod_settings(target)
    key = f"targets.{name}"
    out: list[str] = []
    if not pod.gpu_types.auto and not pod.gpu_types.items:
        out.append(f'{key}.gpu_types: must list at least one GPU type, or be "auto"')
    if "auto" in pod.gpu_types.items or "auto" in pod.data_center_ids.items:
        out.append(f'{key}: write "auto" as a string, not inside a list')
    for field, value in (
        ("min_vram_gb", pod.min_vram_gb),
        ("max_price_per_hour", pod.max_price_per_hour),
    ):
        if value is not None and not pod.gpu_types.auto:
            out.append(f'{key}.{field}: only valid with gpu_types = "auto"')
    if pod.min_vram_gb is not None and pod.min_vram_gb < 1:
        out.append(f"{key}.min_vram_gb: must be at least 1")
    for field, value in (
        ("max_price_per_hour", pod.max_price_per_hour),
        ("max_cost_usd", pod.max_cost_usd),
    ):
        if value is not None and not (math.isfinite(value) and value > 0):
            out.append(f"{key}.{field}: must be greater than 0")
    for field, low in (
        ("container_disk_gb", 20),
        ("boot_grace_minutes", 5),
        ("retrieve_grace_minutes", 1),
    ):
        if getattr(pod, field) < low:
            out.append(f"{key}.{field}: must be at least {low}")
    if pod.venv is not None and not pod.venv.startswith("/"):
        out.append(f"{key}.venv: must be an absolute path")
    if pod.network_volume_id is not None:
        if pod.data_center_ids.auto:
            out.append(f'{key}.data_center_ids: cannot be "auto" with network_volume_id')
        elif len(pod.data_center_ids.items) != 1:
            out.append(f"{key}.network_volume_id: needs exactly one data_center_ids entry")
    if pod.max_volume_gb is not None:
        if pod.network_volume_id is None:
            out.append(f"{key}.max_volume_gb: only valid with network_volume_id")
        if pod.max_volume_gb < 1:
            out.append(f"{key}.max_volume_gb: must be at least 1")
    return out


def _line(pod: RunpodTarget) -> str:
    limits = []
    if pod.min_vram_gb is not None:
        limits.append(f"at least {pod.min_vram_gb} GB")
    if pod.max_price_per_hour is not None:
        limits.append(f"at most ${plain_number(pod.max_price_per_hour)}/h per GPU")
    within = f" ({', '.join(limits)})" if limits else ""
    cost = "" if pod.max_cost_usd is None else f", max ${plain_number(pod.max_cost_usd)}"
    grows = "" if pod.max_volume_gb is None else f" (grows up to {pod.max_volume_gb} GB)"
    centers = pod.data_center_ids
    return (
        f"runpod {pod.gpu_count}x [{pod.gpu_types}]{within}, "
        f"max {plain_number(pod.max_hours)}h{cost}, "
        f"image {pod.image or DEFAULT_RUNPOD_IMAGE}, venv {pod.venv or DEFAULT_RUNPOD_VENV}, "
        f"disk {pod.container_disk_gb} GB, boot grace {pod.boot_grace_minutes} min, "
        f"retrieve grace {pod.retrieve_grace_minutes} min, "
        f"data centers {centers if centers.auto or centers.items else 'any'}, "
        f"network volume {pod.network_volume_id or 'none'}{grows}"
    )


def _summary(target: TargetSettings, shown: Shown) -> list[tuple[str, str]]:
    pod = pod_settings(target)
    return [
        ("", _line(pod)),
        (".ssh_client", ssh_client_line(pod.ssh_client, shown.ssh_client_env)),
    ]


RUNPOD_SETTINGS = SettingsKind(
    name=RunpodTarget.kind,
    settings_type=RunpodTarget,
    summary=_summary,
    problems=_problems,
    range_problems=_ranges,
    reconnect_secs=lambda target: pod_settings(target).reconnect_secs,
)
"""How config reads, checks and shows a runpod target."""
