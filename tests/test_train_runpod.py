"""`overbrainer train` on a Runpod target end to end, against the loopback Runpod fake whose
pods boot for real here: their bootstrap and watchdog run, their own sshd answers with the
run's host key, and the stand-in `axolotl` trains in the pod's directory."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from overbrainer.net.http_server import Request, Response, serve_http
from overbrainer.targets.runpod.scripts import bootstrap_script
from overbrainer.targets.runpod.types import RUN_MARKER
from tests.pod_host import open_pod_host
from tests.ports import free_port
from tests.real_parts import needs
from tests.runpod_fake import KEY, Fault, RunpodFake, gpu, open_fake, pod_json
from tests.sshd_support import SSHD
from tests.train_helpers import STANDIN, command, make_project, only_run, record

pytestmark = needs(
    not SSHD.exists() or shutil.which("ssh") is None or shutil.which("curl") is None,
    "needs the OpenSSH server and client and curl (the pod's watchdog)",
)

A40 = "NVIDIA A40"
RTX = "NVIDIA GeForce RTX 4090"
TARGET = """
[targets.gpu_cloud]
kind = "runpod"
gpu_types = ["{first}", "{second}"]
max_hours = 2
venv = "{venv}"
"""
CAPACITY = "There are no longer any instances available with the requested specifications."


@attrs.frozen
class Setup:
    project: Path
    env: dict[str, str]
    fake: RunpodFake
    pods_root: Path


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[Setup]:
    pods_root = tmp_path / "pods"
    pods_root.mkdir()
    with trio.fail_after(120):
        async with open_pod_host(pods_root) as host, open_fake(RunpodFake(host=host)) as fake:
            yield Setup(*_project(tmp_path, fake, pods_root), fake, pods_root)
    assert fake.violations == []


def _project(tmp_path: Path, fake: RunpodFake, pods_root: Path) -> tuple[Path, dict[str, str]]:
    project = make_project(tmp_path / "p")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    script = venv / "bin" / "axolotl"
    script.write_text(
        "#!/bin/sh\nexport STANDIN_PACE=0.02 STANDIN_EVAL_EVERY=5\n"
        f'exec {sys.executable} {STANDIN} "$@"\n'
    )
    script.chmod(0o755)
    with open(project / "overbrainer.toml", "a") as file:
        file.write(TARGET.format(first=A40, second=RTX, venv=venv))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERBRAINER_", "STANDIN_"))}
    env |= {
        "OVERBRAINER_TEST_POLL_S": "0.05",
        "OVERBRAINER_TRAINING__TARGET": "gpu_cloud",
        "OVERBRAINER_RUNPOD__API_KEY": KEY,
        "OVERBRAINER_RUNPOD__BASE_URL": fake.url,
        "OVERBRAINER_TEST_POD_ROOT": str(pods_root),
    }
    return project, env


async def overbrainer_on(setup: Setup, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`overbrainer ARGS` on the setup's project and fake, to its end (bounded)."""
    with trio.fail_after(90):
        return await trio.run_process(
            command(setup.project, *args),
            env=setup.env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )


async def train(setup: Setup, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`overbrainer train ARGS`."""
    return await overbrainer_on(setup, "train", *args)


def pod_record(project: Path, run_id: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((project / "runs" / run_id / "pod.json").read_text())
    return loaded


def creates(fake: RunpodFake) -> list[str]:
    return [json.loads(r.body)["gpu"]["id"] for r in fake.asked("POST", "pods")]


def messages(stderr: str) -> list[str]:
    """The log lines of stderr without their time and level."""
    return [line.split("  ", 1)[-1].split(" ", 1)[-1] for line in stderr.splitlines()]


def pod_lines(stderr: str) -> list[str]:
    return [line for line in messages(stderr) if line.startswith("pod: ")]


async def test_train_on_a_pod_end_to_end(setup: Setup) -> None:
    done = await train(setup)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    run_id = only_run(setup.project)
    assert out.splitlines()[0].startswith(f"train: run {run_id} succeeded; step ")
    assert record(setup.project, run_id)["state"] == "succeeded"
    run_dir = setup.project / "runs" / run_id
    assert (run_dir / "output" / "adapter_model.safetensors").is_file() or any(
        (run_dir / "output").iterdir()
    )
    lines = pod_lines(err)
    assert lines[0] == f"pod: creating overbrainer-{run_id}-1 ({A40})"
    assert lines[1].startswith(f"pod: created pod0001 ({A40}, US-KS-2, $0.44/h); waiting")
    assert lines[2].startswith("pod: pod0001 ready after ")
    assert lines[-2] == "pod: deleting pod0001 (results retrieved)"
    assert lines[-1].startswith("pod: pod0001 deleted after ")
    pod = pod_record(setup.project, run_id)
    assert (pod["state"], pod["deleted_by"], pod["pod_id"]) == ("deleted", "client", "pod0001")
    assert [a["result"] for a in pod["attempts"]] == ["created"]
    listed = await overbrainer_on(setup, "runs", "ls")
    assert listed.stdout.decode().endswith(
        f"  pod deleted about ${pod['estimated_spend']:.2f}\n"
    ), listed
    # Nothing left on the fake; the client key is forgotten.
    assert setup.fake.pods == {}
    assert not (run_dir / "ssh" / "id_ed25519").exists()
    # The pod ran the create body's `args` (through `sh -c`, as tests/pod_host.py boots it):
    # exactly `bash -c <bootstrap>`, with no secret and no undocumented field in the body.
    (create,) = setup.fake.asked("POST", "pods")
    body = json.loads(create.body)
    assert shlex.split(body["args"]) == ["bash", "-c", bootstrap_script()]
    assert "cmd" not in body and "OVERBRAINER_HOST_KEY" not in body["env"]
    # The pod made its own host key: the client read it from the pod's container log,
    # trusted only it, and never had its private half.
    made = setup.pods_root / "pods" / "pod0001" / "etc" / "ssh" / "ssh_host_ed25519_key.pub"
    host_key = " ".join(made.read_text().split()[:2])
    assert pod["host_key"] == host_key
    known = (run_dir / "ssh" / "known_hosts").read_text()
    assert known == f"overbrainer-{run_id} {host_key}\n"
    assert f"overbrainer-host-key {host_key}" in (run_dir / ".pod" / "pod.log").read_text()
    assert not list(run_dir.rglob("*host*key*"))
    assert body["env"]["OVERBRAINER_CLAIM"] == body["env"]["OVERBRAINER_AUTHORIZED_KEY"]
    # The job ran on the "pod": its run directory there holds the retrieved marker.
    remote = setup.pods_root / "workspace" / "overbrainer" / run_id
    assert (remote / ".pod" / "retrieved").exists()
    assert (remote / ".pod" / "watchdog").read_text() == "ready\n"
    # The pod's own logs are kept here.
    kept = (run_dir / ".pod" / "watchdog.log").read_text()
    assert "verdict: ready" in kept
    assert "starting the watchdog" in (run_dir / ".pod" / "bootstrap.log").read_text()


async def test_capacity_on_the_first_type_then_the_second(setup: Setup) -> None:
    # A pod of a run this project does not have: warned about, never deleted by `train`.
    stray = pod_json(
        "stray01",
        "overbrainer-gone_20260101-000000-1",
        A40,
        {RUN_MARKER: "gone_20260101-000000"},
        "RUNNING",
    )
    setup.fake.pods["stray01"] = stray
    setup.fake.fail(Fault("POST", "pods", status=400, detail=CAPACITY))
    done = await train(setup)
    err = done.stderr.decode()
    assert done.returncode == 0, err
    run_id = only_run(setup.project)
    assert creates(setup.fake) == [A40, RTX]
    assert any(
        line.startswith("pod stray01 is still on Runpod at $0.44/h: not in this project's runs/")
        for line in messages(err)
    ), err
    lines = pod_lines(err)
    assert lines[:3] == [
        f"pod: creating overbrainer-{run_id}-1 ({A40})",
        f"pod: {A40} unavailable (no capacity for this GPU type)",
        f"pod: creating overbrainer-{run_id}-2 ({RTX})",
    ]
    pod = pod_record(setup.project, run_id)
    results = [a["result"] for a in pod["attempts"]]
    assert results == ["unavailable", "created"]
    assert pod["gpu_type"] == RTX
    assert list(setup.fake.pods) == ["stray01"]


async def test_no_credits_fails_the_run_before_any_pod(setup: Setup) -> None:
    setup.fake.fail(Fault("POST", "pods", status=402, detail="insufficient balance"))
    done = await train(setup)
    err = done.stderr.decode()
    run_id = only_run(setup.project)
    assert done.returncode == 1, err
    assert err.splitlines()[-1] == (
        f"error: run {run_id} failed: the Runpod account balance is insufficient"
    )
    assert creates(setup.fake) == [A40]
    saved = record(setup.project, run_id)
    assert (saved["state"], saved["message"]) == (
        "failed",
        "the Runpod account balance is insufficient",
    )
    results = [a["result"] for a in pod_record(setup.project, run_id)["attempts"]]
    assert results == ["refused"]
    assert setup.fake.pods == {}
    assert not (setup.project / "runs" / run_id / "ssh" / "id_ed25519").exists()


async def test_pods_that_never_become_ready_are_deleted(setup: Setup) -> None:
    assert setup.fake.host is not None
    setup.fake.host.boots = False
    setup.fake.create_status = "EXITED"
    done = await train(setup)
    err = done.stderr.decode()
    run_id = only_run(setup.project)
    assert done.returncode == 1, err
    assert err.splitlines()[-1] == (
        f"error: run {run_id} failed: no gpu_types entry gave a ready pod: 2 pods were created "
        "but never became ready, the last one because the pod is EXITED"
    )
    assert "pod: deleting pod0001 (not ready in time)" in pod_lines(err)
    assert "pod: deleting pod0002 (not ready in time)" in pod_lines(err)
    results = [a["result"] for a in pod_record(setup.project, run_id)["attempts"]]
    assert results == ["not_ready", "not_ready"]
    assert record(setup.project, run_id)["state"] == "failed"
    assert setup.fake.pods == {}


async def test_an_unanswered_create_is_reconciled_by_adoption(setup: Setup) -> None:
    # Runpod makes the pod but the answer is a 500: the pod is found by its name and adopted.
    setup.fake.fail(Fault("POST", "pods", status=500, create=True))
    done = await train(setup)
    err = done.stderr.decode()
    assert done.returncode == 0, err
    run_id = only_run(setup.project)
    assert creates(setup.fake) == [A40]
    pod = pod_record(setup.project, run_id)
    assert [(a["result"], a.get("pod_id")) for a in pod["attempts"]] == [("adopted", "pod0001")]
    assert (pod["pod_id"], pod["state"]) == ("pod0001", "deleted")
    assert setup.fake.pods == {}


async def test_keep_pod_keeps_it_and_its_key(setup: Setup) -> None:
    done = await train(setup, "--keep-pod")
    err = done.stderr.decode()
    assert done.returncode == 0, err
    run_id = only_run(setup.project)
    assert record(setup.project, run_id)["state"] == "succeeded"
    assert list(setup.fake.pods) == ["pod0001"]
    assert "--keep-pod: pod pod0001 is kept with no time limit, at $0.44/h" in err
    assert "pod: pod0001 kept (--keep-pod)" in pod_lines(err)
    pod = pod_record(setup.project, run_id)
    assert (pod["state"], pod["keep"], pod["deadline"]) == ("kept", True, None)
    listed = await overbrainer_on(setup, "runs", "ls")
    assert listed.stdout.decode().endswith("  pod kept pod0001\n"), listed
    body = json.loads(setup.fake.asked("POST", "pods")[0].body)
    assert body["env"]["OVERBRAINER_KEEP_POD"] == "1"
    assert "OVERBRAINER_DEADLINE" not in body["env"]
    # The printed way in works: the kept pod answers with the run's own ssh config.
    config = setup.project / "runs" / run_id / "ssh" / "config"
    with trio.fail_after(30):
        reached = await trio.run_process(
            ["ssh", "-F", str(config), f"overbrainer-{run_id}", "echo on-the-pod"],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert reached.stdout == b"on-the-pod\n", reached.stderr


async def interrupt_when(
    setup: Setup, ready: Callable[[], bool], then: trio.Event | None = None
) -> tuple[int, str]:
    """`train`, one SIGINT once `ready()`, then `then` set (a held answer released); its exit
    status and stderr."""
    err_path = setup.project / "train.err"
    with open(err_path, "wb") as err, trio.fail_after(90):  # noqa: ASYNC230 - a test's file
        async with trio.open_nursery() as nursery:
            process = await nursery.start(
                partial(
                    trio.run_process,
                    command(setup.project, "train"),
                    env=setup.env,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    check=False,
                )
            )
            while not ready():  # noqa: ASYNC110 - the signal is the fake's state
                await trio.sleep(0.02)
            process.send_signal(signal.SIGINT)
            if then is not None:
                then.set()
    return process.returncode, err_path.read_text()


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "pods"), ("GET", "pods/pod0001/logs")],
    ids=["during-the-create", "during-the-host-key-read"],
)
async def test_ctrl_c_at_a_provisioning_step(setup: Setup, method: str, path: str) -> None:
    # The step's request is done but its answer held: Ctrl-C lands while it is in flight.
    answer = trio.Event()
    setup.fake.fail(Fault(method, path, held=answer, create=True))
    code, err = await interrupt_when(setup, lambda: bool(setup.fake.asked(method, path)), answer)
    run_id = only_run(setup.project)
    assert code == 130, err
    assert err.splitlines()[-1] == (
        f"interrupted: run {run_id} stopped before its job started; it has no pod left"
    )
    assert len(setup.fake.asked("POST", "pods")) == 1
    assert "pod: deleting pod0001 (interrupted before the job started)" in pod_lines(err)
    assert record(setup.project, run_id)["state"] == "failed"
    assert setup.fake.pods == {}


async def test_ctrl_c_while_the_pod_starts_deletes_it(setup: Setup) -> None:
    # The pod never boots, so the client is still waiting for SSH when Ctrl-C comes.
    assert setup.fake.host is not None
    setup.fake.host.boots = False
    code, err = await interrupt_when(setup, lambda: bool(setup.fake.pods))
    run_id = only_run(setup.project)
    assert code == 130, err
    assert err.splitlines()[-1] == (
        f"interrupted: run {run_id} stopped before its job started; it has no pod left"
    )
    assert "pod: deleting pod0001 (interrupted before the job started)" in err
    assert record(setup.project, run_id)["state"] == "failed"
    assert pod_record(setup.project, run_id)["state"] == "deleted"
    assert setup.fake.pods == {}


def remote_steps(pods_root: Path) -> int:
    """The highest step the job logged on the pod."""
    files = list((pods_root / "workspace" / "overbrainer").glob("*/metrics.jsonl"))
    if len(files) != 1:
        return 0
    lines = files[0].read_text().splitlines()
    return max((json.loads(line).get("step", 0) for line in lines if line), default=0)


async def test_ctrl_c_while_following_detaches_and_attach_ends_the_pod(setup: Setup) -> None:
    script = setup.project.parent / "venv" / "bin" / "axolotl"
    script.write_text(script.read_text().replace("STANDIN_PACE=0.02", "STANDIN_PACE=0.25"))
    code, err = await interrupt_when(setup, lambda: remote_steps(setup.pods_root) >= 2)
    run_id = only_run(setup.project)
    assert code == 130, err
    assert err.splitlines()[-1].startswith(
        f"interrupted: run {run_id} keeps running on pod pod0001 ($0.44/h); follow it again "
        f"with `overbrainer train attach {run_id}`, or delete the pod with "
        f"`overbrainer pod rm {run_id}`. The watchdog deletes the pod 60 min after the job ends"
    )
    assert list(setup.fake.pods) == ["pod0001"]
    assert pod_record(setup.project, run_id)["state"] == "running"
    with trio.fail_after(90):
        attached = await trio.run_process(
            command(setup.project, "train", "attach", run_id),
            env=setup.env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert attached.returncode == 0, attached.stderr.decode()
    out = attached.stdout.decode()
    assert out.startswith(f"train: run {run_id} succeeded; step 20/20")
    assert "pod: deleting pod0001 (results retrieved)" in pod_lines(attached.stderr.decode())
    assert pod_record(setup.project, run_id)["state"] == "deleted"
    assert setup.fake.pods == {}


async def test_the_cost_cap_asks_for_a_snapshot_then_deletes_the_pod(setup: Setup) -> None:
    # $0.0006 buys about 5 s of the pod at $0.44/h: the snapshot is asked for at once (15 min
    # before the cap is already past), and a job that ignores it loses its pod at the cap.
    config = setup.project / "overbrainer.toml"
    config.write_text(config.read_text() + "max_cost_usd = 0.0006\n")
    script = setup.project.parent / "venv" / "bin" / "axolotl"
    script.write_text(
        script.read_text().replace(
            "STANDIN_PACE=0.02", "STANDIN_PACE=0.5 STANDIN_IGNORE_SNAPSHOT=1"
        )
    )
    done = await train(setup)
    err = done.stderr.decode()
    run_id = only_run(setup.project)
    assert done.returncode == 1, err
    assert err.splitlines()[-1] == (
        f"error: run {run_id} failed: max_cost_usd reached: the pod was deleted before the job "
        "ended"
    )
    said = messages(err)
    assert any(line.startswith("max_cost_usd $0.00 buys less than 30 min") for line in said)
    assert any(line.startswith("the pod reaches max_cost_usd $0.00 in 0 min") for line in said), err
    assert "pod: deleting pod0001 (max_cost_usd reached)" in pod_lines(err)
    remote = setup.pods_root / "workspace" / "overbrainer" / run_id
    assert (remote / "snapshot.request").read_text() == "cost"
    assert (remote / ".pod" / "cost_cap_at").exists()
    saved = record(setup.project, run_id)
    assert (saved["state"], saved["job"] is not None) == ("failed", True)
    assert setup.fake.pods == {}


def slow_job(setup: Setup, extra: str = "") -> None:
    """The stand-in trains 200 steps of 0.1 s: long enough to be stopped or cancelled."""
    script = setup.project.parent / "venv" / "bin" / "axolotl"
    script.write_text(
        script.read_text().replace(
            "STANDIN_PACE=0.02", f"STANDIN_PACE=0.1 STANDIN_STEPS=200 {extra}".rstrip()
        )
    )


def held_job(setup: Setup) -> None:
    """`slow_job`, held after its step 2 until it is stopped or cancelled (at most 120 s): a
    test acts on a running job however loaded the machine."""
    slow_job(setup, f"STANDIN_HOLD=2:{setup.pods_root / 'never-released'}")


async def detached_run(setup: Setup) -> str:
    """A run whose `train` was detached by Ctrl-C once its job logged two steps on the pod."""
    code, err = await interrupt_when(setup, lambda: remote_steps(setup.pods_root) >= 2)
    assert code == 130, err
    run_id = only_run(setup.project)
    assert pod_record(setup.project, run_id)["state"] == "running"
    return run_id


async def test_train_stop_on_a_pod_snapshots_retrieves_then_deletes_it(setup: Setup) -> None:
    held_job(setup)
    run_id = await detached_run(setup)
    done = await train(setup, "stop", run_id)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    lines = out.splitlines()
    assert lines[0] == (
        f"train: snapshot of run {run_id} requested: its job saves a checkpoint at the end of "
        "its current step, then stops"
    )
    assert lines[1].startswith(f"train: run {run_id} stopped at step ")
    step = int(lines[1].split("stopped at step ")[1].split(" ")[0])
    assert 2 <= step < 200
    saved = record(setup.project, run_id)
    assert saved["state"] == "stopped"
    run_dir = setup.project / "runs" / run_id
    assert any((run_dir / "output" / f"checkpoint-{step}").iterdir())
    assert pod_lines(err)[-2:][0] == "pod: deleting pod0001 (results retrieved)"
    pod = pod_record(setup.project, run_id)
    assert (pod["state"], pod["deleted_by"]) == ("deleted", "client")
    remote = setup.pods_root / "workspace" / "overbrainer" / run_id
    assert (remote / "snapshot.request").read_text() == "requested\n"
    assert setup.fake.pods == {}
    # Nothing is left to stop or cancel.
    again = await train(setup, "stop", run_id)
    assert again.returncode == 2
    assert again.stderr.decode().splitlines()[-1] == f"error: run {run_id} already ended: stopped"


async def test_train_cancel_on_a_pod_cancels_records_and_deletes_it(setup: Setup) -> None:
    held_job(setup)
    run_id = await detached_run(setup)
    done = await train(setup, "cancel", run_id)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    assert out.splitlines() == [f"train: run {run_id} cancelled"]
    assert record(setup.project, run_id)["state"] == "cancelled"
    assert "pod: deleting pod0001 (results retrieved)" in pod_lines(err)
    assert pod_record(setup.project, run_id)["state"] == "deleted"
    assert (setup.project / "runs" / run_id / "job.log").is_file()
    assert remote_steps(setup.pods_root) < 200
    assert setup.fake.pods == {}


async def test_train_stop_and_cancel_of_a_run_whose_pod_is_deleted(setup: Setup) -> None:
    held_job(setup)
    run_id = await detached_run(setup)
    removed = await overbrainer_on(setup, "pod", "rm", run_id, "--force")
    assert removed.returncode == 0, removed.stderr.decode()
    for verb in ("stop", "cancel"):
        done = await train(setup, verb, run_id)
        assert done.returncode == 2, done.stderr.decode()
        assert done.stderr.decode().splitlines()[-1] == f"error: run {run_id} already ended: failed"
    assert setup.fake.pods == {}


async def test_max_hours_deletes_the_pod_of_a_stuck_job(setup: Setup) -> None:
    # max_hours = 0.003 (10.8 s): the job's pace (15 s of steps) ends past it (the overrun
    # note), but it hangs after its third step, so no metric renews the lease; the client guard
    # deletes the pod once the deadline plus its grace passed and the lease is stale (the
    # guard's clocks shortened; test_pod_lease checks them at their real hours). The deadline
    # leaves a slow pod start time to log two steps before it.
    config = setup.project / "overbrainer.toml"
    config.write_text(config.read_text().replace("max_hours = 2", "max_hours = 0.003"))
    never = setup.pods_root.parent / "never-released"
    slow_job(setup, f"STANDIN_STEPS=150 STANDIN_HOLD=3:{never}")
    setup.env["OVERBRAINER_TEST_LEASE_S"] = "0.1,0.2,1,0.5,1.5"
    done = await train(setup)
    err = done.stderr.decode()
    run_id = only_run(setup.project)
    assert done.returncode == 1, err
    assert err.splitlines()[-1] == (
        f"error: run {run_id} failed: max_hours reached: the pod was deleted before the job ended"
    )
    pod = pod_record(setup.project, run_id)
    notes = [line for line in messages(err) if line.startswith("at this pace the job needs")]
    assert len(notes) == 1, err
    assert notes[0].endswith(
        f"more, past max_hours ({pod['deadline']}): the pod stays while overbrainer follows the "
        "job; if it stops following, the pod's watchdog deletes the pod"
    )
    assert "pod: deleting pod0001 (max_hours reached)" in pod_lines(err)
    assert (pod["state"], pod["deleted_by"]) == ("deleted", "client")
    saved = record(setup.project, run_id)
    assert (saved["state"], saved["job"] is not None) == ("failed", True)
    assert setup.fake.pods == {}


def kept_host_key(setup: Setup) -> bool:
    """Whether the only run has kept the pod's host-key line of Runpod's log in `.pod/pod.log`."""
    kept = list((setup.project / "runs").glob("*/.pod/pod.log"))
    return len(kept) == 1 and " container overbrainer-host-key " in kept[0].read_text()


async def test_runs_logs_pod_prints_kept_lines_then_runpods_stream(setup: Setup) -> None:
    held_job(setup)
    # Detached once the log capture (which runs beside the job) has kept the pod's first lines.
    code, err = await interrupt_when(
        setup, lambda: remote_steps(setup.pods_root) >= 2 and kept_host_key(setup)
    )
    assert code == 130, err
    run_id = only_run(setup.project)
    kept = (setup.project / "runs" / run_id / ".pod" / "pod.log").read_text().splitlines()
    bodies = [line.split(" ", 1)[1] for line in kept]
    assert bodies[:2] == [
        "system create pod pod0001: pulling "
        + json.loads(setup.fake.asked("POST", "pods")[0].body)["image"],
        "container starting the container",
    ]
    # Then the pod's own output (its container log), the host-key line among it.
    assert any(body.startswith("container overbrainer-host-key ssh-ed25519 ") for body in bodies)
    # Runpod has more lines since: `--pod` prints the kept ones, then the new ones (the
    # pod's own output printed since comes around them, in Runpod's order).
    setup.fake.log("pod0001", "container", "step 3 done \x1b[31mred\x1b[0m")
    setup.fake.log("pod0001", "system", "GPU 0 at 71 C")
    done = await overbrainer_on(setup, "runs", "logs", run_id, "--pod")
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()
    lines = out.splitlines()
    pod_part = [line.split(" ", 1)[1] for line in lines[lines.index("== pod ==") + 1 :]]
    assert pod_part[: len(kept)] == bodies
    newer = pod_part[len(kept) :]
    added = ["container step 3 done red", "system GPU 0 at 71 C"]
    assert [line for line in newer if line in added] == added
    # The command is read-only: the kept cursor did not move.
    assert (setup.project / "runs" / run_id / ".pod" / "pod.log").read_text().splitlines() == kept
    # `--source system`: no script logs, only Runpod's system lines.
    done = await overbrainer_on(setup, "runs", "logs", run_id, "--pod", "--source", "system")
    lines = done.stdout.decode().splitlines()
    assert lines[0] == "== pod =="
    assert [line.split(" ", 1)[1] for line in lines[1:]] == [
        bodies[0],
        "system GPU 0 at 71 C",
    ]
    logs_asked = [r for r in setup.fake.requests if r.path == "/v2/pods/pod0001/logs"]
    assert logs_asked[-1].headers.get("last-event-id") == kept_cursor(setup, run_id)
    # Once the pod is gone, Runpod has no more lines to give.
    cancel = await train(setup, "cancel", run_id)
    assert cancel.returncode == 0, cancel.stderr.decode()
    assert "pod: cannot keep" not in cancel.stderr.decode()
    done = await overbrainer_on(setup, "runs", "logs", run_id, "--pod")
    lines = done.stdout.decode().splitlines()
    assert "== .pod/watchdog.log ==" in lines, cancel.stderr.decode()
    # The pod's end kept its last lines (the pod's own output may follow Runpod's).
    assert any(line.endswith(" system GPU 0 at 71 C") for line in lines)
    assert setup.fake.pods == {}


def kept_cursor(setup: Setup, run_id: str) -> str:
    return (setup.project / "runs" / run_id / ".pod" / "pod.log.cursor").read_text().strip()


def watchdog_asked(fake: RunpodFake) -> bool:
    """Whether the pod's watchdog sent its probe (its own User-Agent)."""
    agents = (r.headers.get("user-agent", "") for r in fake.requests)
    return any(agent.startswith("overbrainer-watchdog/") for agent in agents)


async def test_ctrl_c_while_waiting_for_the_watchdogs_verdict(setup: Setup) -> None:
    # The pod boots and its sshd answers, but its watchdog's probe is never answered, so no
    # verdict is written: the client waits for one when Ctrl-C comes.
    setup.fake.fail(
        Fault("GET", "pods/pod0001", agent="overbrainer-watchdog", held=trio.Event(), create=True)
    )

    seen: list[float] = []

    def waiting() -> bool:
        """True 1.5 s after the watchdog probed and the client wrote the pod's ssh config."""
        configs = list((setup.project / "runs").glob("*/ssh/config"))
        if not (watchdog_asked(setup.fake) and configs):
            return False
        seen.append(trio.current_time())
        return seen[-1] - seen[0] > 1.5

    code, err = await interrupt_when(setup, waiting)
    run_id = only_run(setup.project)
    assert code == 130, err
    assert err.splitlines()[-1] == (
        f"interrupted: run {run_id} stopped before its job started; it has no pod left"
    )
    assert "pod: deleting pod0001 (interrupted before the job started)" in pod_lines(err)
    assert not any(line.startswith("pod: pod0001 ready") for line in pod_lines(err))
    remote = setup.pods_root / "workspace" / "overbrainer" / run_id
    assert not (remote / ".pod" / "watchdog").exists()
    saved = record(setup.project, run_id)
    assert (saved["state"], saved["message"], saved.get("job")) == (
        "failed",
        "interrupted before its job started",
        None,
    )
    assert pod_record(setup.project, run_id)["state"] == "deleted"
    assert setup.fake.pods == {}


async def test_ctrl_c_between_ready_and_the_job_start(setup: Setup) -> None:
    # The pod is ready; the look for other pods of the run (`GET /pods`) is held, so Ctrl-C
    # lands after the pod was ready and before the job starts.
    # (The first `GET /pods` is the stray listing at the start: answered at once.)
    answer = trio.Event()
    setup.fake.fail(
        Fault("GET", "pods", create=True, exact=True),
        Fault("GET", "pods", held=answer, create=True, exact=True),
    )

    def sweeping() -> bool:
        """The pod is ready and the slow look for other pods was asked (Ctrl-C cancels it)."""
        records = list((setup.project / "runs").glob("*/pod.json"))
        ready = bool(records) and json.loads(records[0].read_text()).get("state") == "ready"
        return ready and len(setup.fake.asked("GET", "pods")) == 2

    code, err = await interrupt_when(setup, sweeping, answer)
    run_id = only_run(setup.project)
    assert code == 130, err
    assert err.splitlines()[-1] == (
        f"interrupted: run {run_id} stopped before its job started; it has no pod left"
    )
    assert len(setup.fake.asked("GET", "pods")) == 2  # no sweep after the interruption
    lines = pod_lines(err)
    assert any(line.startswith("pod: pod0001 ready after ") for line in lines)
    assert "pod: deleting pod0001 (interrupted before the job started)" in lines
    saved = record(setup.project, run_id)
    assert (saved["state"], saved.get("job")) == ("failed", None)
    remote = setup.pods_root / "workspace" / "overbrainer" / run_id
    assert not (remote / "job.pid").exists()
    assert setup.fake.pods == {}


# A model of 40e9 parameters (qlora: about 24 GB of weights) with Qwen3-4B's layout: its floor
# is above the 24 GB of an RTX 4090, below the 48 GB of an A40.
BIG_INFO = {"safetensors": {"total": 40_000_000_000}}
BIG_CONFIG = {"hidden_size": 2560, "num_hidden_layers": 36, "vocab_size": 151936}
H100 = "NVIDIA H100 80GB HBM3"
L40S = "NVIDIA L40S"
A6000 = "NVIDIA RTX A6000"


async def test_auto_gpu_types_use_the_vram_floor_and_reread_the_catalog(
    setup: Setup, nursery: trio.Nursery
) -> None:
    asked: list[str] = []

    async def hub(request: Request) -> Response:
        asked.append(request.path)
        body = BIG_INFO if request.path.startswith("/api/models/") else BIG_CONFIG
        return Response(200, json.dumps(body).encode(), (("content-type", "application/json"),))

    host, port = await nursery.start(serve_http, hub, "127.0.0.1", 0)
    trained: list[subprocess.CompletedProcess[bytes]] = []

    async def run_train() -> None:
        trained.append(await train(setup))

    setup.env["OVERBRAINER_HUB__BASE_URL"] = f"http://{host}:{port}"
    config = setup.project / "overbrainer.toml"
    config.write_text(
        config.read_text().replace(f'gpu_types = ["{A40}", "{RTX}"]', 'gpu_types = "auto"')
    )
    # The A40 has no capacity (answered once the test releases it); meanwhile the catalog
    # changes: the H100 is out of stock, the A6000 gone, and a new type in stock. The re-read
    # after the A40 tries that one.
    answer = trio.Event()
    setup.fake.fail(Fault("POST", "pods", status=400, detail=CAPACITY, held=answer, exact=True))
    async with trio.open_nursery() as inner:
        inner.start_soon(run_train)
        with trio.fail_after(60):
            while not setup.fake.asked("POST", "pods"):  # noqa: ASYNC110 - the fake's state
                await trio.sleep(0.02)
        setup.fake.gpus = [
            *(g for g in setup.fake.gpus if g["id"] not in (H100, A6000)),
            gpu(H100, 80, 2.69, availability="NONE", data_centers=()),
            gpu(L40S, 48, 0.79),
        ]
        answer.set()
    done = trained[0]
    err = done.stderr.decode()
    assert done.returncode == 0, err
    said = messages(err)
    estimate = [line for line in said if line.startswith("the run needs about ")]
    assert len(estimate) == 1, err
    floor = int(estimate[0].rsplit("at least ", 1)[1].split(" ")[0])
    assert 24 < floor <= 48, estimate
    picks = [line for line in said if line.startswith('gpu_types = "auto" picked ')]
    assert picks[0].startswith(f'gpu_types = "auto" picked {A40} ($0.40/h, 48 GB), {H100}')
    assert RTX not in picks[0]
    assert creates(setup.fake) == [A40, L40S]
    assert picks[1] == f'gpu_types = "auto" picked {L40S} ($0.79/h, 48 GB)'
    assert len(setup.fake.asked("GET", "catalog/gpus")) == 2
    assert asked[0].startswith("/api/models/")


async def test_a_full_disk_stops_the_job_with_a_snapshot(setup: Setup) -> None:
    # The disk policy's thresholds lowered to 1 % (test hook): the pod's disk counts as full
    # at once, so the client warns, then asks the job for a `disk` snapshot; the run stops.
    held_job(setup)
    setup.env["OVERBRAINER_TEST_DISK"] = "0.2,1,1"
    done = await train(setup)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    run_id = only_run(setup.project)
    assert out.splitlines()[0].startswith(f"train: run {run_id} stopped at step ")
    assert " (disk): snapshot in runs/" in out.splitlines()[0]
    said = messages(err)
    full = [line for line in said if line.startswith("the pod's disk is ")]
    assert full and full[0].endswith(" GB free)"), err
    assert "the pod's disk is nearly full: its job is stopped with a snapshot" in said
    remote = setup.pods_root / "workspace" / "overbrainer" / run_id
    assert (remote / "snapshot.request").read_text() == "disk"
    assert record(setup.project, run_id)["state"] == "stopped"
    assert pod_record(setup.project, run_id)["state"] == "deleted"
    assert setup.fake.pods == {}


async def test_auto_without_an_estimate_and_a_failed_reread_keeps_the_order(
    setup: Setup,
) -> None:
    # The Hub cannot be reached (a closed port): no VRAM floor, a warning. The catalog's
    # second read is refused: the first pick's order goes on, with a warning.
    closed = free_port()
    setup.env["OVERBRAINER_HUB__BASE_URL"] = f"http://127.0.0.1:{closed}"
    config = setup.project / "overbrainer.toml"
    config.write_text(
        config.read_text().replace(f'gpu_types = ["{A40}", "{RTX}"]', 'gpu_types = "auto"')
    )
    setup.fake.fail(
        Fault("POST", "pods", status=400, detail=CAPACITY, exact=True),
        Fault("GET", "catalog/gpus", create=True, exact=True),
        Fault("GET", "catalog/gpus", status=403, detail="not allowed", exact=True),
    )
    done = await train(setup)
    err = done.stderr.decode()
    assert done.returncode == 0, err
    said = messages(err)
    assert any(
        line.startswith("cannot estimate the VRAM the run needs (Hugging Face could not be ")
        and line.endswith('gpu_types = "auto" picks without a VRAM floor')
        for line in said
    ), err
    assert any(
        line.startswith("cannot read Runpod's GPU catalog again (")
        and line.endswith('the other gpu_types = "auto" picks are tried in their first order')
        for line in said
    ), err
    assert creates(setup.fake) == [A40, RTX]
    assert len(setup.fake.asked("GET", "catalog/gpus")) == 2


def ssh_masters(parent: int) -> list[int]:
    """The `ssh … -M` ControlMaster processes below `parent` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            args = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and args[0].endswith(b"ssh") and b"-M" in args:
            found.append(int(stat.parent.name))
    return found


async def test_a_pod_deleted_elsewhere_while_following_fails_the_run(setup: Setup) -> None:
    # The pod vanishes from Runpod (its job and sshd killed); the command's own ControlMaster
    # is then ended, as a deleted pod's connection would be: the job cannot be reached, and
    # Runpod no longer has the pod, so the run failed.
    held_job(setup)
    err_path = setup.project / "train.err"
    with open(err_path, "wb") as err_file:  # noqa: ASYNC230 - a test's file
        async with trio.open_nursery() as nursery:
            process = await nursery.start(
                partial(
                    trio.run_process,
                    command(setup.project, "train"),
                    env=setup.env,
                    stdout=subprocess.DEVNULL,
                    stderr=err_file,
                    check=False,
                )
            )
            with trio.fail_after(60):
                while remote_steps(setup.pods_root) < 2:  # noqa: ASYNC110 - the pod's files
                    await trio.sleep(0.02)
            setup.fake.vanish("pod0001")
            for master in ssh_masters(process.pid):
                os.kill(master, signal.SIGTERM)
    err = err_path.read_text()
    run_id = only_run(setup.project)
    assert process.returncode == 1, err
    assert err.splitlines()[-1] == f"error: run {run_id} failed: pod pod0001 no longer exists"
    saved = record(setup.project, run_id)
    assert (saved["state"], saved["message"]) == ("failed", "pod pod0001 no longer exists")
    pod = pod_record(setup.project, run_id)
    assert (pod["state"], pod["deleted_by"]) == ("deleted", "unknown")
    assert not (setup.project / "runs" / run_id / "ssh" / "id_ed25519").exists()


def _builtin_client_and_an_ssh_trap(setup: Setup, folder: Path) -> Path:
    """`ssh_client = "builtin"` for the target, and an `ssh` first on PATH that records its
    use; the file it would write."""
    with open(setup.project / "overbrainer.toml", "a") as file:
        file.write('ssh_client = "builtin"\n')
    used = folder / "ssh-used"
    trap = folder / "trap"
    trap.mkdir()
    (trap / "ssh").write_text(f'#!/bin/sh\necho "$@" >> {used}\nexit 255\n')
    (trap / "ssh").chmod(0o755)
    setup.env["PATH"] = f"{trap}{os.pathsep}{setup.env['PATH']}"
    return used


async def test_train_on_a_pod_over_the_builtin_ssh_client(setup: Setup, tmp_path: Path) -> None:
    """`ssh_client = "builtin"` (the reference's Runpod example): the pod is reached through
    the run's own ssh config, known_hosts and key, and no `ssh` process is ever started."""
    used = _builtin_client_and_an_ssh_trap(setup, tmp_path)
    wrong = attrs.evolve(setup, env=setup.env | {"OVERBRAINER_SSH_CLIENT": "putty"})
    refused = await train(wrong)
    assert refused.returncode == 2
    assert refused.stderr.decode().splitlines()[-1] == (
        "error: OVERBRAINER_SSH_CLIENT: must be openssh or builtin"
    )
    assert setup.fake.asked("POST", "pods") == []  # refused before any pod existed
    done = await train(setup)
    err = done.stderr.decode()
    assert done.returncode == 0, err
    run_id = only_run(setup.project)
    assert done.stdout.decode().startswith(f"train: run {run_id} succeeded; step ")
    assert pod_lines(err)[-1].startswith("pod: pod0001 deleted after ")
    assert not used.exists()
