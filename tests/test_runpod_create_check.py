"""Our own check of a create body against Runpod's `CreatePodRequest` and its 400 rules."""

from __future__ import annotations

from overbrainer.config.settings import ListOrAuto
from overbrainer.targets import RunpodTarget
from overbrainer.targets.runpod.create_body import PodRequest, create_body
from overbrainer.targets.runpod.create_check import body_problems

TARGET = RunpodTarget(gpu_types=ListOrAuto(items=("NVIDIA A40",)), max_hours=4)
REQUEST = PodRequest(
    run_id="r1",
    attempt=1,
    gpu_type="NVIDIA A40",
    data_center_ids=("EU-RO-1",),
    deadline_unix=1,
    api_url="http://127.0.0.1:1",
    authorized_key="ssh-ed25519 AAAA overbrainer-r1",
    bootstrap="true",
)


def test_the_body_overbrainer_builds_passes() -> None:
    assert body_problems(create_body(TARGET, REQUEST)) == []


def test_the_description_s_rules_are_named() -> None:
    body = create_body(TARGET, REQUEST)
    gpu = body["gpu"]
    assert isinstance(gpu, dict)
    broken = {
        **body,
        "cmd": ["bash"],
        "cpu": {"flavorId": "cpu3c"},
        "gpu": {**gpu, "allowedCudaVersions": ["12.8"]},
        "mounts": {"persistent": {"size": 1, "path": "/p"}, "network": []},
    }
    del broken["image"]
    assert body_problems(broken) == [
        "field 'cmd' is not in CreatePodRequest",
        "exactly one of `gpu` or `cpu` must be set",
        "`image` is required unless `templateId` is set",
        "a non-empty `gpu.allowedCudaVersions` excludes `gpu.minCudaVersion`",
        "`mounts` takes at most one of `persistent` or `network`",
        "`mounts.persistent` is invalid on a CPU pod",
    ]
