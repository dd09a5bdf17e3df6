"""A real multi-node Ray cluster on this machine for a test: a head and worker nodes (CPU only),
each a `ray start --block` in its own session, every port from `free_port()`, torn down by
session so that nothing of it outlives the test (and nothing else on the machine is touched:
`ray stop` would end every Ray on the machine, another test's cluster included).

Prototype for issue 42 (docs/ray-notes.md has the measurements behind the choices).
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import attrs
import psutil
import pytest

from tests.ports import free_port
from tests.real_parts import missing
from tests.server_process import wait_until_up

UP_WITHIN = 120.0
"""Seconds the whole cluster has to come up (about 10 s idle on 2 cores, far more under load)."""
STOP_GRACE = 2.0
"""Seconds a node has after SIGTERM before its whole session is killed. A worker node's
`ray start --block` ends in under 1 s; the head's did not end within 15 s (3 of its processes
stayed): waiting longer buys nothing, the test's cluster and its files are thrown away."""
STOP_WITHIN = 15.0
"""Seconds SIGKILLed processes have to disappear."""
OBJECT_STORE_BYTES = 100 * 1024 * 1024
"""Each node's object store: Ray's default is 30% of memory (7 GB here), the tests need little."""
WORKER_PORTS = 8
"""Ports each node's worker processes may bind (one each: job supervisor, driver, tasks)."""


@attrs.frozen
class RayNode:
    """One `ray start --block` process, leader of its own session, and its log."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path


@attrs.frozen
class RayCluster:
    """A running cluster: its dashboard (the Jobs API), its GCS address, its nodes."""

    dashboard_url: str
    gcs_address: str
    temp_dir: Path
    nodes: tuple[RayNode, ...]
    token: str | None = None
    """The cluster's token when it was started with token authentication."""


RAY_ENV = "OVERBRAINER_RAY"
"""The `ray` executable the nodes start from (.ci/run sets it to .ci/ray-venv.sh's venv)."""


def ray_executable() -> str:
    """The `ray` command: `$OVERBRAINER_RAY`, else beside this interpreter, else on PATH; or a
    skip (a failure in CI)."""
    named = os.environ.get(RAY_ENV)
    if named:
        if not os.access(named, os.X_OK):
            missing(f"${RAY_ENV} names {named}, which is not an executable")
        return named
    beside = Path(sys.executable).with_name("ray")
    found = str(beside) if beside.exists() else shutil.which("ray")
    if found is None:
        missing(f"no `ray` here: set ${RAY_ENV} (`bash .ci/ray-venv.sh` prints its venv)")
    return found


def node_ports() -> list[str]:
    """The flags that give one node its own ports, so that two nodes (and two tests) never meet."""
    workers = ",".join(str(free_port()) for _ in range(WORKER_PORTS))
    flags = {
        "--node-manager-port": free_port(),
        "--object-manager-port": free_port(),
        "--dashboard-agent-listen-port": free_port(),
        "--dashboard-agent-grpc-port": free_port(),
        "--metrics-export-port": free_port(),
        "--runtime-env-agent-port": free_port(),
    }
    return [f"{flag}={port}" for flag, port in flags.items()] + [f"--worker-port-list={workers}"]


def start_node(
    name: str, args: list[str], temp_dir: Path, token: str | None = None, ray: str | None = None
) -> RayNode:
    """Start one node in its own session, its output in `temp_dir/NAME.log`; with `token`,
    the node asks every client for it (Ray's token authentication)."""
    log = temp_dir / f"{name}.log"
    # RAY_AUTH_MODE explicitly: unset, `ray start` turns token auth on by itself whenever
    # ~/.ray/auth_token exists (a local `ray.init()` writes one), and the API answers 401.
    # A job's entrypoint `python …` is whatever the node's PATH finds: the venv that has `ray`.
    ray = ray or ray_executable()
    path = f"{Path(ray).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {
        **os.environ,
        "PATH": path,
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "disabled" if token is None else "token",
    }
    env.pop("RAY_AUTH_TOKEN_PATH", None)
    if token is not None:
        env["RAY_AUTH_TOKEN"] = token
    with log.open("wb") as out:
        process = subprocess.Popen(
            [ray, "start", "--block", "--disable-usage-stats", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    return RayNode(name=name, process=process, log=log)


def get_json(url: str, token: str | None = None) -> object:
    """GET `url` and decode its JSON body (urllib: the fixture runs outside trio)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as answer:
        return json.loads(answer.read())


def alive_nodes(dashboard_url: str, token: str | None = None) -> int:
    """How many nodes the head reports alive (0 while its dashboard is not answering)."""
    try:
        body = get_json(f"{dashboard_url}/api/v0/nodes", token)
    except (OSError, urllib.error.URLError, http.client.HTTPException, ValueError):
        return 0
    assert isinstance(body, dict)
    nodes = body["data"]["result"]["result"]
    return sum(1 for node in nodes if node["state"] == "ALIVE")


def stop_node(node: RayNode) -> None:
    """SIGTERM the node's `ray start`, then SIGKILL whatever is left of its session."""
    sid = node.process.pid
    if node.process.poll() is None:
        os.killpg(sid, signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            node.process.wait(timeout=STOP_GRACE)
    # Ray's daemons (raylet, GCS, agents, workers, a job's driver) stay in the session even when
    # they make themselves process-group leaders: end them by session id.
    kill_session(sid)
    if node.process.poll() is None:
        node.process.kill()
        node.process.wait(timeout=STOP_WITHIN)


def kill_session(sid: int) -> None:
    """SIGKILL every process of session `sid` and wait for them to go."""
    left = []
    for process in psutil.process_iter():
        try:
            if os.getsid(process.pid) == sid:
                process.kill()
                left.append(process)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    psutil.wait_procs(left, timeout=STOP_WITHIN)


def session_processes(sid: int) -> list[int]:
    """The processes of session `sid` still running (for the teardown's check)."""
    found = []
    for process in psutil.process_iter():
        try:
            if os.getsid(process.pid) == sid and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process.pid)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return found


def start_worker(
    name: str,
    n: int,
    gcs_address: str,
    temp_dir: Path,
    token: str | None,
    common: list[str],
    ray: str | None = None,
) -> RayNode:
    """Start worker node `name` with the custom resource `worker<n>` (a test's way to put a
    task on it)."""
    args = [
        f"--address={gcs_address}",
        f"--temp-dir={temp_dir / name}",
        f"--resources={json.dumps({f'worker{n}': 1})}",
        *common,
        *node_ports(),
    ]
    return start_node(name, args, temp_dir, token, ray)


def node_args(cpus: int = 1) -> list[str]:
    """The flags every node of a fixture's cluster gets."""
    return [
        f"--num-cpus={cpus}",
        "--node-ip-address=127.0.0.1",
        f"--object-store-memory={OBJECT_STORE_BYTES}",
    ]


def dashboard_pid(cluster: RayCluster) -> int:
    """The PID of the head's dashboard process (the Jobs API's server), to freeze it."""
    head = cluster.nodes[0].process.pid
    for process in psutil.process_iter(["cmdline"]):
        try:
            if os.getsid(process.pid) == head and any(
                part.endswith("dashboard/dashboard.py") for part in process.info["cmdline"] or []
            ):
                return process.pid
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    raise AssertionError("the head has no dashboard process")


@contextmanager
def ray_cluster(
    workers: int = 1, cpus_per_node: int = 1, token: str | None = None, ray: str | None = None
) -> Iterator[RayCluster]:
    """A head and `workers` worker nodes, up and registered; stopped whatever the test does.
    With `token`, the cluster runs with token authentication and asks every client for it;
    `ray`: the `ray` executable its nodes start from (default: `ray_executable()`).

    Each worker node has a custom resource `worker<N>` (1.0) so that a test can place a task on
    a given node. The temporary directory is short: Ray's Unix sockets live under it (108 bytes).
    """
    temp_dir = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    gcs_port, dashboard_port = free_port(), free_port()
    gcs_address = f"127.0.0.1:{gcs_port}"
    dashboard_url = f"http://127.0.0.1:{dashboard_port}"
    common = node_args(cpus_per_node)
    nodes: list[RayNode] = []
    try:
        head_args = [
            "--head",
            f"--port={gcs_port}",
            "--dashboard-host=127.0.0.1",
            f"--dashboard-port={dashboard_port}",
            "--include-dashboard=true",
            f"--ray-client-server-port={free_port()}",
            f"--temp-dir={temp_dir / 'head'}",
            *common,
            *node_ports(),
        ]
        head = start_node("head", head_args, temp_dir, token, ray)
        nodes.append(head)
        wait_until_up(
            "ray head",
            lambda: alive_nodes(dashboard_url, token) >= 1,
            head.process,
            head.log,
            UP_WITHIN,
            0.2,
        )
        for n in range(1, workers + 1):
            worker = start_worker(f"worker{n}", n, gcs_address, temp_dir, token, common, ray)
            nodes.append(worker)
        for node in nodes[1:]:
            wait_until_up(
                f"ray {node.name}",
                lambda: alive_nodes(dashboard_url, token) >= 1 + workers,
                node.process,
                node.log,
                UP_WITHIN,
                0.2,
            )
        yield RayCluster(
            dashboard_url=dashboard_url,
            gcs_address=gcs_address,
            temp_dir=temp_dir,
            nodes=tuple(nodes),
            token=token,
        )
    finally:
        started = time.monotonic()
        # Workers first: a head that goes first leaves them retrying its address.
        for node in reversed(nodes):
            stop_node(node)
        left = [pid for node in nodes for pid in session_processes(node.process.pid)]
        shutil.rmtree(temp_dir, ignore_errors=True)
        assert not left, f"Ray processes left after {time.monotonic() - started:.1f} s: {left}"


_SHARED = pytest.StashKey[RayCluster]()
TOKEN_ENV = "OB_TEST_RAY_TOKEN"
"""Where the tests' targets find the shared cluster's token (`token_env`)."""


def shared_cluster(config: pytest.Config) -> RayCluster:
    """One cluster per test process (an xdist worker), with token authentication, for every
    `ray` module it runs: module fixtures would start one per module, and again whenever the
    scheduler interleaves two modules' tests. Stopped when the session ends."""
    found = config.stash.get(_SHARED, None)
    if found is not None:
        return found
    context = ray_cluster(workers=1, token=secrets.token_hex(16))
    cluster = context.__enter__()

    def stop() -> None:
        context.__exit__(None, None, None)

    config.add_cleanup(stop)
    config.stash[_SHARED] = cluster
    return cluster


def adopt(config: pytest.Config, node: RayNode) -> None:
    """Stop `node` (started by a test, in the shared cluster) when the session ends."""
    config.add_cleanup(lambda: stop_node(node))
