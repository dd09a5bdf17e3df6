"""`overbrainer train` on a Runpod target end to end, against the loopback Runpod fake whose
pods boot for real here: a run that trains and deletes its pod, `--keep-pod`, and the
builtin SSH client."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import attrs
import trio

from overbrainer.targets.runpod.scripts import bootstrap_script
from tests import runpod_train_support as pods
from tests.runpod_train_support import (
    A40,
    Setup,
    overbrainer_on,
    pod_lines,
    pod_record,
    train,
)
from tests.train_helpers import only_run, record

pytestmark = pods.needs_pod_tools
setup = pods.setup  # the fixture: a project on a Runpod target, the fake, its pod host


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
