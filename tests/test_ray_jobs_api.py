"""The `ray` kind's Jobs API client against a real two-node Ray cluster (token authentication on):
submit under our own ID with a working_dir package, status, logs, stop, delete; refusals as one
line; a frozen or unreachable head as a bounded error; a killed worker node.
"""

from __future__ import annotations

import os
import secrets
import signal
import time

import pytest
import trio

from overbrainer.model.errors import EXIT_USAGE
from overbrainer.targets.ray.connect import open_cluster
from overbrainer.targets.ray.errors import RayError, RayJobMissing, RayRefused, RayUnanswered
from overbrainer.targets.ray.jobs_api import JobInfo, JobsApi, JobState, Submission, package
from overbrainer.targets.ray.settings import RayTarget
from tests.ports import free_port
from tests.ray_support import (
    TOKEN_ENV,
    RayCluster,
    adopt,
    dashboard_pid,
    kill_session,
    node_args,
    shared_cluster,
    start_worker,
)

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600), pytest.mark.xdist_group("ray")]

JOB_SCRIPT = b"""\
import sys, time, ray
ray.init()

@ray.remote(num_cpus=1, resources={"worker1": 0.1})
def step(i, pause):
    time.sleep(pause)
    return f"step {i} on node {ray.get_runtime_context().get_node_id()}"

for i in range(int(sys.argv[1])):
    print(ray.get(step.remote(i, float(sys.argv[2]))), flush=True)
print("done", flush=True)
"""
JOB_WITHIN = 180.0
"""Seconds a job has to reach a state (a first job sets up its runtime env: seconds idle)."""


@pytest.fixture
def cluster(pytestconfig: pytest.Config) -> RayCluster:
    """The process's head and worker node, token authentication on (tests/ray_support.py)."""
    return shared_cluster(pytestconfig)


@pytest.fixture
def target(cluster: RayCluster, monkeypatch: pytest.MonkeyPatch) -> RayTarget:
    """A target of the cluster, its token in the environment as a user sets it."""
    assert cluster.token is not None
    monkeypatch.setenv(TOKEN_ENV, cluster.token)
    return RayTarget(
        address=cluster.dashboard_url, storage="/unused", token_env=TOKEN_ENV, request_secs=10
    )


async def submit(api: JobsApi, sid: str, steps: int, pause: float = 0.2) -> None:
    """Upload the job's package and submit `python job.py STEPS PAUSE` as `sid`."""
    uri = await api.upload(package({"job.py": JOB_SCRIPT}, salt=sid))
    runtime_env: dict[str, object] = {"working_dir": uri, "env_vars": {"OB_RUN": sid}}
    entrypoint = f"python job.py {steps} {pause}"
    await api.submit(Submission(entrypoint, sid, runtime_env, {"overbrainer_run": sid}))


async def wait_for(api: JobsApi, sid: str, *states: JobState) -> JobInfo:
    """Poll the job until it is in one of `states` (Ray pushes no status events)."""
    with trio.fail_after(JOB_WITHIN):
        while True:
            info = await api.status(sid)
            if info.state in states:
                return info
            await trio.sleep(0.2)


async def wait_for_log(api: JobsApi, sid: str, text: str) -> None:
    """Poll the job's log until it holds `text`."""
    with trio.fail_after(JOB_WITHIN):
        while True:
            if text in await api.logs(sid):
                return
            await trio.sleep(0.2)


async def test_a_job_runs_under_our_id_and_says_how_it_ended(target: RayTarget) -> None:
    async with open_cluster("c", target) as api:
        assert await api.version() == "2.60.0"
        await submit(api, "ob-api-1", steps=3)
        info = await wait_for(api, "ob-api-1", JobState.SUCCEEDED, JobState.FAILED)
        logs = await api.logs("ob-api-1")
        assert info.state is JobState.SUCCEEDED, logs
        assert info.exit_code == 0
        assert info.metadata == {"overbrainer_run": "ob-api-1"}
        assert "step 2 on node" in logs
        assert logs.endswith("done\n")

        # The same package again is found, not sent twice; the same ID again is refused.
        pkg = package({"job.py": JOB_SCRIPT}, salt="ob-api-1")
        assert await api.upload(pkg) == pkg.uri
        with pytest.raises(RayError) as refused:
            await api.submit(Submission("python job.py 1 0", "ob-api-1", {}))
        assert refused.value.status == 500
        assert "\n" not in refused.value.message
        assert "ob-api-1 already exists" in refused.value.message, refused.value.message


async def test_a_running_job_is_stopped_then_deleted(target: RayTarget) -> None:
    async with open_cluster("c", target) as api:
        await submit(api, "ob-api-2", steps=10_000)
        await wait_for_log(api, "ob-api-2", "step 0 on node")

        with pytest.raises(RayError) as running:
            await api.delete("ob-api-2")
        assert "\n" not in running.value.message
        assert "non-terminal state" in running.value.message

        assert await api.stop("ob-api-2") is True
        info = await wait_for(api, "ob-api-2", JobState.STOPPED, JobState.FAILED)
        assert info.state is JobState.STOPPED
        assert info.exit_code is None
        # Stopping an ended job is no error (Ray answers `stopped` false, or true while its
        # supervisor is still going: both seen).
        await api.stop("ob-api-2")
        assert await api.delete("ob-api-2") is True
        with pytest.raises(RayJobMissing, match="no job `ob-api-2`"):
            await api.status("ob-api-2")
        with pytest.raises(RayJobMissing):
            await api.logs("ob-api-2")


async def test_a_missing_or_wrong_token_is_refused_in_one_line_without_the_token(
    cluster: RayCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    none = RayTarget(address=cluster.dashboard_url, storage="/unused")
    async with open_cluster("c", none) as api:
        with pytest.raises(RayRefused) as missing:
            await api.status("anything")
    assert missing.value.exit_code == EXIT_USAGE
    assert "HTTP 401" in missing.value.message

    wrong = "wrong-" + secrets.token_hex(12)
    monkeypatch.setenv(TOKEN_ENV, wrong)
    bad = RayTarget(address=cluster.dashboard_url, storage="/unused", token_env=TOKEN_ENV)
    async with open_cluster("c", bad) as api:
        with pytest.raises(RayRefused) as refused:
            await api.version()
    assert "HTTP 403" in refused.value.message
    assert "\n" not in refused.value.message
    assert wrong not in refused.value.message


async def test_a_frozen_head_is_a_bounded_error_then_answers_again(
    cluster: RayCluster, target: RayTarget
) -> None:
    frozen = RayTarget(
        address=target.address, storage="/unused", token_env=TOKEN_ENV, request_secs=1
    )
    pid = dashboard_pid(cluster)
    async with open_cluster("c", frozen) as api:
        await api.version()
        os.kill(pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(RayUnanswered, match="did not answer within 1s"):
                await api.status("any-job")
            assert time.monotonic() - started < 5
        finally:
            os.kill(pid, signal.SIGCONT)
        with trio.fail_after(30):
            while True:
                try:
                    assert await api.version() == "2.60.0"
                    break
                except RayUnanswered:
                    # The answers to the requests sent while frozen may still be on their way.
                    continue


async def test_an_unreachable_head_is_a_bounded_error() -> None:
    nobody = RayTarget(address=f"http://127.0.0.1:{free_port()}", storage="/unused")
    async with open_cluster("c", nobody) as api:
        with trio.fail_after(10), pytest.raises(RayUnanswered) as caught:
            await api.version()
    assert caught.value.message.startswith("the Ray cluster at 127.0.0.1:")
    assert "\n" not in caught.value.message


async def test_a_killed_worker_node_leaves_the_job_running_until_a_node_rejoins(
    cluster: RayCluster, target: RayTarget, pytestconfig: pytest.Config
) -> None:
    worker = cluster.nodes[1]
    async with open_cluster("c", target) as api:
        await submit(api, "ob-api-kill", steps=8, pause=0.5)
        await wait_for_log(api, "ob-api-kill", "step 1 on node")
        await trio.to_thread.run_sync(kill_session, worker.process.pid)
        # Ray waits for a node that can run the task: the job is not failed meanwhile.
        assert (await api.status("ob-api-kill")).state is JobState.RUNNING
        rejoined = await trio.to_thread.run_sync(
            start_worker,
            "worker1b",
            1,
            cluster.gcs_address,
            cluster.temp_dir,
            cluster.token,
            node_args(),
        )
        # It stays: later tests of this process place tasks on `worker1` too.
        adopt(pytestconfig, rejoined)
        info = await wait_for(api, "ob-api-kill", JobState.SUCCEEDED, JobState.FAILED)
        logs = await api.logs("ob-api-kill")
        assert info.state is JobState.SUCCEEDED, logs
        assert "step 7 on node" in logs
