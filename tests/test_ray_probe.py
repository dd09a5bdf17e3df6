"""Prototype (issue 42): a real multi-node Ray cluster, driven through its Jobs API over plain HTTP.

The job ships its files as a working_dir package (PUT /api/packages/gcs/NAME.zip, as Ray's SDK
does), runs a task on the worker node (its custom resource), and is stopped and deleted.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio

from tests.ray_support import RayCluster, ray_cluster

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]

JOB_SCRIPT = """\
import sys, time, ray
ray.init()
print("job_id", ray.get_runtime_context().get_job_id(), flush=True)

@ray.remote(num_cpus=1, resources={"worker1": 0.1})
def step(i):
    time.sleep(0.2)
    return f"step {i} on node {ray.get_runtime_context().get_node_id()}"

for i in range(int(sys.argv[1])):
    print(ray.get(step.remote(i)), flush=True)
print("done", flush=True)
"""
TERMINAL = {"SUCCEEDED", "FAILED", "STOPPED"}
JOB_WITHIN = 180.0
"""Seconds a job has to reach a state (a first job sets up its runtime env: seconds idle)."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    """One head and one worker node, shared by this module's tests."""
    with ray_cluster(workers=1) as running:
        yield running


def package(files: dict[str, str]) -> tuple[str, bytes]:
    """A working_dir package: its GCS name (content-addressed, as Ray's SDK names it) and zip."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in sorted(files.items()):
            archive.writestr(name, text)
    data = buffer.getvalue()
    return f"_ray_pkg_{hashlib.sha1(data).hexdigest()[:16]}.zip", data


async def upload(client: httpx2.AsyncClient, base: str, name: str, data: bytes) -> str:
    """Pin (GET) and upload (PUT) a package unless the cluster has it; its `gcs://` URI."""
    url = f"{base}/api/packages/gcs/{name}"
    if (await client.get(url)).status_code == 404:
        (await client.put(url, content=data)).raise_for_status()
    return f"gcs://{name}"


async def job_status(client: httpx2.AsyncClient, base: str, sid: str) -> dict[str, Any]:
    """GET /api/jobs/{id}: the job's details."""
    response = await client.get(f"{base}/api/jobs/{sid}")
    response.raise_for_status()
    body: dict[str, Any] = response.json()
    return body


async def job_logs(client: httpx2.AsyncClient, base: str, sid: str) -> str:
    """GET /api/jobs/{id}/logs: the whole driver log so far."""
    response = await client.get(f"{base}/api/jobs/{sid}/logs")
    response.raise_for_status()
    logs: str = response.json()["logs"]
    return logs


async def wait_for_status(
    client: httpx2.AsyncClient, base: str, sid: str, wanted: set[str]
) -> dict[str, Any]:
    """Poll the job until its status is one of `wanted` (Ray pushes no status events)."""
    with trio.fail_after(JOB_WITHIN):
        while True:
            status = await job_status(client, base, sid)
            if status["status"] in wanted:
                return status
            await trio.sleep(0.2)


async def wait_for_log(client: httpx2.AsyncClient, base: str, sid: str, text: str) -> None:
    """Poll the job's log until it holds `text`."""
    with trio.fail_after(JOB_WITHIN):
        while True:
            if text in await job_logs(client, base, sid):
                return
            await trio.sleep(0.2)


async def worker_node_id(client: httpx2.AsyncClient, base: str) -> str:
    """The node ID of the worker node (the one with the `worker1` resource)."""
    response = await client.get(f"{base}/api/v0/nodes")
    nodes = response.json()["data"]["result"]["result"]
    (node,) = [n for n in nodes if "worker1" in n["resources_total"]]
    node_id: str = node["node_id"]
    return node_id


async def test_a_job_runs_its_task_on_the_worker_node(cluster: RayCluster, tmp_path: Path) -> None:
    base = cluster.dashboard_url
    name, data = package({"job.py": JOB_SCRIPT, "data.jsonl": '{"q": 1}\n'})
    async with httpx2.AsyncClient(timeout=30) as client:
        uri = await upload(client, base, name, data)
        body = {
            "entrypoint": "python job.py 3",
            "submission_id": "ob-probe-1",
            "runtime_env": {"working_dir": uri, "env_vars": {"OB_RUN": "probe"}},
            "entrypoint_num_cpus": 0,
            "metadata": {"overbrainer_run": "probe"},
        }
        response = await client.post(f"{base}/api/jobs/", json=body)
        assert response.json() == {"job_id": "ob-probe-1", "submission_id": "ob-probe-1"}

        status = await wait_for_status(client, base, "ob-probe-1", TERMINAL)
        logs = await job_logs(client, base, "ob-probe-1")
        assert status["status"] == "SUCCEEDED", logs
        assert status["driver_exit_code"] == 0
        assert status["metadata"] == {"overbrainer_run": "probe"}
        worker = await worker_node_id(client, base)
        assert f"step 2 on node {worker}" in logs
        assert logs.endswith("done\n")


async def test_a_running_job_is_stopped_then_deleted(cluster: RayCluster) -> None:
    base = cluster.dashboard_url
    name, data = package({"job.py": JOB_SCRIPT})
    async with httpx2.AsyncClient(timeout=30) as client:
        uri = await upload(client, base, name, data)
        body = {"entrypoint": "python job.py 10000", "submission_id": "ob-probe-2"}
        body["runtime_env"] = {"working_dir": uri}  # type: ignore[assignment]
        (await client.post(f"{base}/api/jobs/", json=body)).raise_for_status()
        await wait_for_log(client, base, "ob-probe-2", "step 0 on node")

        refused = await client.delete(f"{base}/api/jobs/ob-probe-2")
        assert refused.status_code == 500  # a running job cannot be deleted
        stop = await client.post(f"{base}/api/jobs/ob-probe-2/stop")
        assert stop.json() == {"stopped": True}
        status = await wait_for_status(client, base, "ob-probe-2", TERMINAL)
        assert status["status"] == "STOPPED"
        again = await client.post(f"{base}/api/jobs/ob-probe-2/stop")
        assert again.json() == {"stopped": False}

        deleted = await client.delete(f"{base}/api/jobs/ob-probe-2")
        assert deleted.json() == {"deleted": True}
        gone = await client.get(f"{base}/api/jobs/ob-probe-2")
        assert gone.status_code == 404
