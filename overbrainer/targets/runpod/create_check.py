"""Our own check of a `POST /pods` body against Runpod's published description, before it is
sent: what the description's `CreatePodRequest` allows and the cross-field rules it says are
refused with 400. A body that passes is well formed, so a 400 on it is about the candidate."""

from __future__ import annotations

BODY_FIELDS = frozenset(
    {
        # ContainerConfig (BaseContainerConfig and `registry`)
        "args",
        "disk",
        "env",
        "image",
        "ports",
        "registry",
        # CreatePodRequest's own
        "name",
        "cloud",
        "cpu",
        "dataCenterIds",
        "globalNetworking",
        "gpu",
        "mounts",
        "startJupyter",
        "startSsh",
        "templateId",
    }
)
"""`CreatePodRequest` has `unevaluatedProperties: false`: no other top-level field."""

GPU_FIELDS = frozenset({"id", "count", "allowedCudaVersions", "minCudaVersion"})


def body_problems(body: dict[str, object]) -> list[str]:
    """What in `body` breaks `CreatePodRequest` or one of its cross-field rules; [] if none."""
    problems = [
        f"field {key!r} is not in CreatePodRequest" for key in body if key not in BODY_FIELDS
    ]
    name = body.get("name")
    if not isinstance(name, str) or not name:
        problems.append("`name` is required (a non-empty string)")
    if ("gpu" in body) == ("cpu" in body):
        problems.append("exactly one of `gpu` or `cpu` must be set")
    if "templateId" not in body and not isinstance(body.get("image"), str):
        problems.append("`image` is required unless `templateId` is set")
    gpu = body.get("gpu")
    if isinstance(gpu, dict):
        problems += [
            f"field 'gpu.{key}' is not in CreateGpuConfig" for key in gpu if key not in GPU_FIELDS
        ]
        if not isinstance(gpu.get("id"), str):
            problems.append("`gpu.id` is required")
        if gpu.get("allowedCudaVersions") and "minCudaVersion" in gpu:
            problems.append("a non-empty `gpu.allowedCudaVersions` excludes `gpu.minCudaVersion`")
    mounts = body.get("mounts")
    if isinstance(mounts, dict):
        if "persistent" in mounts and "network" in mounts:
            problems.append("`mounts` takes at most one of `persistent` or `network`")
        if "persistent" in mounts and "cpu" in body:
            problems.append("`mounts.persistent` is invalid on a CPU pod")
    return problems
