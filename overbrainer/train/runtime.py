"""What a training job runs on a local or SSH target: native or container commands."""

from __future__ import annotations

import os
from collections.abc import Sequence

import attrs

from overbrainer.config.settings import DEFAULT_IMAGE, LocalTarget, Runtime, SshTarget
from overbrainer.config.settings import Engine as ConfigEngine
from overbrainer.train.job_script import (
    Command,
    Engine,
    container_commands,
    container_name,
    native_commands,
)
from overbrainer.train.metric import JobStage

CONTAINER_ROOT = "/workspace/run"
"""The run directory as a container job sees it."""
AXOLOTL = "axolotl"
CONFIG_FILE = "axolotl.yaml"
METRICS_FILE = "metrics.jsonl"
REQUEST_FILE = "snapshot.request"
PROOF_FILE = "snapshot.json"
PLUGIN_DIR = "plugin"
SECRET_NAMES = ("HF_TOKEN",)
"""The only secret a training job gets."""


@attrs.frozen
class JobPlan:
    """The commands of one job (inside the §4.2 wrapper) and its container, if any."""

    commands: str
    container: tuple[Engine, str] | None = None


def training_commands(merge: bool) -> list[Command]:
    """`axolotl train`, then `axolotl merge-lora` when the adapter is merged."""
    commands = [Command(JobStage.TRAIN, AXOLOTL, ("train", CONFIG_FILE))]
    if merge:
        commands.append(Command(JobStage.MERGE, AXOLOTL, ("merge-lora", CONFIG_FILE)))
    return commands


def job_env(root: str) -> dict[str, str]:
    """The job's non-secret variables, with paths under `root` (the run dir as the job sees it)."""
    root = root.rstrip("/")
    return {
        "AXOLOTL_DO_NOT_TRACK": "1",
        "PYTHONPATH": f"{root}/{PLUGIN_DIR}",
        "OVERBRAINER_METRICS": f"{root}/{METRICS_FILE}",
        "OVERBRAINER_SNAPSHOT": f"{root}/{REQUEST_FILE}",
    }


def job_root(target: LocalTarget | SshTarget, run_dir: str) -> str:
    """The run directory as the job sees it: itself natively, `/workspace/run` in a container."""
    return CONTAINER_ROOT if target.runtime is Runtime.DOCKER else run_dir


def expand_venv(venv: str | None) -> str | None:
    """A local venv path with `~/` expanded to this user's home."""
    return None if venv is None else os.path.expanduser(venv)


def plan_job(
    target: LocalTarget | SshTarget,
    *,
    run_id: str,
    run_dir: str,
    cache: str,
    commands: Sequence[Command],
    secrets: Sequence[str] = (),
    venv: str | None = None,
) -> JobPlan:
    """The job's commands for the target's runtime (§4.2); `secrets` are passed by name only."""
    env = job_env(job_root(target, run_dir))
    if target.runtime is Runtime.NATIVE:
        return JobPlan(native_commands(commands, env, venv=venv))
    engine = Engine((target.engine or ConfigEngine.DOCKER).value)
    text = container_commands(
        engine,
        run_id=run_id,
        run_dir=run_dir,
        cache=cache,
        image=target.image or DEFAULT_IMAGE,
        commands=commands,
        env=env,
        secrets=secrets,
    )
    return JobPlan(text, (engine, container_name(run_id)))
