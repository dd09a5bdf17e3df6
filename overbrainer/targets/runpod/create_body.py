"""The `POST /pods` body for a run's pod: the reference's fields (reference §7.2), each one of
Runpod's published `CreatePodRequest` (`openapi-v2.json`), which allows no other."""

from __future__ import annotations

import os
import shlex

import attrs

from overbrainer import __version__
from overbrainer.config.settings import DEFAULT_RUNPOD_IMAGE
from overbrainer.targets.runpod.api import MIN_CUDA
from overbrainer.targets.runpod.settings import RunpodTarget
from overbrainer.targets.runpod.types import RUN_MARKER, Pod

POD_ROOT_ENV = "OVERBRAINER_TEST_POD_ROOT"
"""Tests only: a directory standing in for the pod's `/`, so a "pod" can be this machine."""


def pod_path(path: str) -> str:
    """An absolute path on the pod (moved under `OVERBRAINER_TEST_POD_ROOT` when it is set)."""
    root = os.environ.get(POD_ROOT_ENV, "").rstrip("/")
    return root + path


WORKDIR = "/workspace/overbrainer"
VOLUME_DIR = "/workspace/data"
VOLUME_WORKDIR = f"{VOLUME_DIR}/overbrainer"
JOB_ENV = "/etc/overbrainer/job.env"
"""The job's environment file, written by the bootstrap (PATH, CUDA libraries, HF_HOME)."""

COMMAND_FIELD = "args"
"""The create body's field that starts the bootstrap. Runpod's description lists no `cmd`
(the reference's array, which `unevaluatedProperties: false` refuses); it has `args`, a string:
"Arguments passed to the container entrypoint"."""


def command_value(script: str) -> str:
    """The value of `COMMAND_FIELD`: `bash -c <script>` as one string of POSIX-shell words, so
    splitting it as a shell does gives back exactly `bash`, `-c` and the script, whatever
    quotes, `$`, backslashes or newlines the script holds."""
    return shlex.join(["bash", "-c", script])


def pod_name(run_id: str, attempt: int) -> str:
    """The name of the run's `attempt`-th pod (1-based)."""
    return f"overbrainer-{run_id}-{attempt}"


def pod_of_run(pod: Pod, run_id: str) -> bool:
    """Whether Runpod's `pod` was made for run `run_id`: its run marker, or its name."""
    return pod.run_id == run_id or pod.name.startswith(f"overbrainer-{run_id}-")


def workdir(target: RunpodTarget) -> str:
    """The pod's work directory: on the network volume when there is one."""
    return pod_path(VOLUME_WORKDIR if target.network_volume_id is not None else WORKDIR)


@attrs.frozen
class PodRequest:
    """What one create call needs beyond the target: the run, the attempt and its keys."""

    run_id: str
    attempt: int
    gpu_type: str
    data_center_ids: tuple[str, ...]
    deadline_unix: int | None
    """None when the pod is kept (`--keep-pod`)."""
    api_url: str
    authorized_key: str
    """The client's public key (`ssh-ed25519 AAAA… overbrainer-<id>`): one per run, so also
    the owner claim of the run directory on the pod."""
    bootstrap: str
    """The whole bootstrap + watchdog script run by `bash -c`."""


def pod_env(target: RunpodTarget, request: PodRequest) -> dict[str, str]:
    """The pod's environment: public values only (the pod makes its own host key)."""
    work = workdir(target)
    env = {
        RUN_MARKER: request.run_id,
        "OVERBRAINER_WORKDIR": work,
        "OVERBRAINER_RUN_DIR": f"{work}/{request.run_id}",
    }
    if request.deadline_unix is not None:
        env["OVERBRAINER_DEADLINE"] = str(request.deadline_unix)
    env["OVERBRAINER_BOOT_GRACE"] = str(target.boot_grace_minutes * 60)
    env["OVERBRAINER_RETRIEVE_GRACE"] = str(target.retrieve_grace_minutes * 60)
    env["OVERBRAINER_KEEP_POD"] = "0" if request.deadline_unix is not None else "1"
    if target.network_volume_id is not None:
        env["OVERBRAINER_VOLUME_DIR"] = pod_path(VOLUME_DIR)
    env["OVERBRAINER_API_URL"] = request.api_url
    env["OVERBRAINER_AUTHORIZED_KEY"] = request.authorized_key
    env["OVERBRAINER_CLAIM"] = request.authorized_key
    env["OVERBRAINER_VERSION"] = __version__
    env["JUPYTER_DISABLE"] = "1"
    return env


def create_body(target: RunpodTarget, request: PodRequest) -> dict[str, object]:
    """The create body: these fields and no others, optional ones only when they apply."""
    body: dict[str, object] = {
        "name": pod_name(request.run_id, request.attempt),
        "image": target.image or DEFAULT_RUNPOD_IMAGE,
        "cloud": "SECURE",
        "gpu": {"id": request.gpu_type, "count": target.gpu_count, "minCudaVersion": MIN_CUDA},
        "disk": target.container_disk_gb,
        "ports": ["22/tcp"],
        "startSsh": False,
    }
    if request.data_center_ids:
        body["dataCenterIds"] = list(request.data_center_ids)
    if target.network_volume_id is not None:
        body["mounts"] = {"network": [{"volumeId": target.network_volume_id, "path": VOLUME_DIR}]}
    body["env"] = pod_env(target, request)
    body[COMMAND_FIELD] = command_value(request.bootstrap)
    return body
