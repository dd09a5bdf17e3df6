"""`overbrainer train` on an `ssh` target end to end: a real sshd on 127.0.0.1, the stand-in
`axolotl` in a "venv" of its own, and a workdir that is this machine's own directory."""

from __future__ import annotations

import collections.abc
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from overbrainer.config.settings import SshClient
from tests.sshd_support import ALIAS, Sshd, kill_jobs_under, make_sshd
from tests.train_helpers import (
    STANDIN,
    command,
    event_kinds,
    group_alive,
    make_project,
    only_run,
    overbrainer,
    record,
    release,
    standin_gpu,
    train_sampled,
    wait_for,
)
from tests.train_helpers import hold_at as held

TARGET = """
[targets.box]
kind = "ssh"
runtime = "native"
venv = "{venv}"
workdir = "{workdir}"
ssh_client = "{client}"
"""

CLIENTS = pytest.mark.parametrize(
    "client", list(SshClient), ids=[client.value for client in SshClient]
)


@pytest.fixture
def remote(tmp_path: Path) -> collections.abc.Iterator[Path]:
    folder = tmp_path / "remote"
    yield folder
    kill_jobs_under(folder)


def ssh_project(
    tmp_path: Path,
    sshd: Sshd,
    remote: Path,
    client: SshClient = SshClient.OPENSSH,
    hold_at: int = 0,
    **knobs: str,
) -> tuple[Path, dict[str, str]]:
    """A project whose target `box` is this machine over sshd; the env that runs it.

    The job gets no environment of ours over SSH, so the stand-in's knobs are written into the
    venv's `bin/axolotl` itself. `hold_at` keeps the job at that step until `release(tmp_path)`,
    so a test acts on a job that cannot finish first."""
    if hold_at:
        knobs |= held(tmp_path, hold_at)
    project = make_project(tmp_path / "p")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    exports = "".join(f"export {name}='{value}'\n" for name, value in knobs.items())
    script = venv / "bin" / "axolotl"
    script.write_text(
        f"#!/bin/sh\nexport STANDIN_PACE=0.02 STANDIN_EVAL_EVERY=5\n{exports}"
        f'exec {sys.executable} {STANDIN} "$@"\n'
    )
    script.chmod(0o755)
    standin_gpu(venv / "bin")
    with open(project / "overbrainer.toml", "a") as file:
        file.write(TARGET.format(venv=venv, workdir=remote, client=client.value))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERBRAINER_", "STANDIN_"))}
    env |= {
        "OVERBRAINER_TEST_POLL_S": "0.05",
        "OVERBRAINER_TRAINING__TARGET": "box",
        "OVERBRAINER_TARGETS__BOX__HOST": ALIAS,
        "OVERBRAINER_SSH_CONFIG": str(sshd.client_config),
    }
    return project, env


def remote_steps(remote: Path) -> int:
    """The highest step logged by the only run's job on the target."""
    files = list(remote.glob("*/metrics.jsonl"))
    if len(files) != 1:
        return 0
    steps = [json.loads(line).get("step", 0) for line in files[0].read_text().splitlines() if line]
    return max(steps, default=0)


def start_train(project: Path, env: dict[str, str], err: Path, *args: str) -> subprocess.Popen[str]:
    with open(err, "w") as stderr:
        return subprocess.Popen(
            command(project, "train", *args),
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )


def detach_after(project: Path, env: dict[str, str], remote: Path, err: Path, steps: int) -> str:
    """`train` on box, Ctrl-C once its job logged `steps` steps; the run ID."""
    train = start_train(project, env, err)
    try:
        wait_for(lambda: remote_steps(remote) >= steps, 30)
        train.send_signal(signal.SIGINT)
        out, _ = train.communicate(timeout=30)
    finally:
        train.kill()
        train.wait()
    run_id = only_run(project)
    assert train.returncode == 130, err.read_text()
    assert out == ""
    assert err.read_text().splitlines()[-1] == (
        f"interrupted: run {run_id} keeps running on target `box`; "
        f"follow it again with `overbrainer train attach {run_id}`"
    )
    return run_id


def metric_lines(stderr: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"INFO train: (step .*)", stderr)]


@CLIENTS
def test_a_run_on_an_ssh_target_is_followed_retrieved_and_verified(
    sshd: Sshd, remote: Path, tmp_path: Path, client: SshClient
) -> None:
    project, env = ssh_project(tmp_path, sshd, remote, client, hold_at=2)
    env["OVERBRAINER_HF_TOKEN"] = "hf_over_ssh"
    trap = tmp_path / "trap"  # an `ssh` that records its use: the builtin client never runs it
    trap.mkdir()
    (trap / "ssh").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "ssh-used"}\nexit 255\n')
    (trap / "ssh").chmod(0o755)
    if client is SshClient.BUILTIN:
        env["PATH"] = f"{trap}{os.pathsep}{env['PATH']}"
    events = tmp_path / "events.jsonl"
    result = train_sampled(project, env, tmp_path, events, "--target", "box")
    assert result.returncode == 0, result.stderr
    run_id = only_run(project)
    remote_dir = remote.resolve() / run_id
    assert result.stdout.splitlines() == [
        f"train: run {run_id} succeeded; step 20/20, epoch 1.00, loss 1.0000, eval_loss 0.0476; "
        f"output in runs/{run_id}/output",
        f"train: adapter in runs/{run_id}/output",
    ]
    assert f"INFO train: run {run_id} on target `box`, in {remote_dir}" in result.stderr
    assert metric_lines(result.stderr)[-1] == "step 20/20 (100%), epoch 1.00, eval_loss 0.0476"
    saved = record(project, run_id)
    assert (saved["state"], saved["remote_dir"]) == ("succeeded", str(remote_dir))
    assert saved["job"]["dir"] == str(remote_dir)
    assert "system" in event_kinds(events)  # the target's probe, over the same connection
    local = project / "runs" / run_id
    # Retrieved and verified: the same bytes here as on the target, checkpoints left there.
    for name in ("output/adapter_model.safetensors", "metrics.jsonl", "job.log"):
        assert (local / name).read_bytes() == (remote_dir / name).read_bytes()
    assert not list((local / "output").glob("checkpoint-*"))
    assert not (local / "exit_code").exists()  # job files stay on the target
    # The job ran in R, with R's paths, and got the token on stdin (never on a command line).
    config = (remote_dir / "axolotl.yaml").read_text()
    assert f'output_dir: "{remote_dir}/output"' in config
    assert "hf_over_ssh" not in (remote_dir / "job.log").read_text() + result.stderr
    logs = overbrainer(project, env, "runs", "logs", run_id)
    assert logs.returncode == 0
    assert logs.stdout == (local / "job.log").read_text()
    assert not (tmp_path / "ssh-used").exists()


def drop_connections(client: SshClient, command: subprocess.Popen[str], sshd: Sshd) -> None:
    """Cut `command`'s SSH connection: kill its OpenSSH master, or (builtin: no process of its
    own) the sshd processes serving the connections."""
    if client is SshClient.OPENSSH:
        parent, pattern = command.pid, "ControlPersist=no"
    else:
        assert sshd.process is not None
        parent, pattern = sshd.process.pid, "sshd"
    found = subprocess.run(
        ["pgrep", "-P", str(parent), "-f", pattern], capture_output=True, text=True
    ).stdout.split()
    assert found
    for pid in found:
        os.kill(int(pid), signal.SIGKILL)


@CLIENTS
def test_ctrl_c_detaches_attach_follows_and_a_dropped_connection_is_made_again(
    sshd: Sshd, remote: Path, tmp_path: Path, client: SshClient
) -> None:
    project, env = ssh_project(tmp_path, sshd, remote, client, STANDIN_STEPS="40", hold_at=3)
    run_id = detach_after(project, env, remote, tmp_path / "train.err", 3)
    pid = record(project, run_id)["job"]["pid"]
    assert group_alive(pid)  # Ctrl-C left the job training on the target
    err = tmp_path / "attach.err"
    attach = start_train(project, env, err, "attach", run_id)
    try:
        wait_for(lambda: "train: job running" in err.read_text(), 30)
        drop_connections(client, attach, sshd)  # the connection drops while following
        release(tmp_path)
        out, _ = attach.communicate(timeout=60)
    finally:
        attach.kill()
        attach.wait()
    stderr = err.read_text()
    assert attach.returncode == 0, stderr
    assert (
        "WARN ssh: the connection to target `box` was lost (its job keeps running): reconnecting"
        in stderr
    )
    assert out.splitlines()[0].startswith(f"train: run {run_id} succeeded; step 40/40")
    assert record(project, run_id)["state"] == "succeeded"
    assert (project / "runs" / run_id / "output" / "adapter_model.safetensors").is_file()


LOST = "WARN ssh: the connection to target `box` was lost (its job keeps running): reconnecting"


@CLIENTS
def test_a_hard_outage_is_ridden_out_and_the_run_succeeds(
    tmp_path: Path, remote: Path, client: SshClient
) -> None:
    server = make_sshd(tmp_path / "own_sshd")  # killed in the middle, so not the shared one
    server.start()
    try:
        project, env = ssh_project(tmp_path, server, remote, client, hold_at=3)
        env["OVERBRAINER_LOG"] = "overbrainer=info,overbrainer.training.follow_job=debug,warn"
        err = tmp_path / "train.err"
        train = start_train(project, env, err)
        try:
            wait_for(lambda: remote_steps(remote) >= 3, 30)
            server.outage()
            # Down until the follower has failed 3 times in a row (1 s, then 2 s apart): the
            # old budget (5 polls 0.05 s apart here) gave up within a fraction of a second.
            wait_for(lambda: "(failure 3)" in err.read_text(), 60)
            assert train.poll() is None, err.read_text()
            server.start()
            release(tmp_path)
            out, _ = train.communicate(timeout=90)
        finally:
            train.kill()
            train.wait()
        stderr = err.read_text()
        run_id = only_run(project)
        assert train.returncode == 0, stderr
        assert stderr.count(LOST) == 1, stderr
        assert f"INFO cannot reach the job of run {run_id} (trying again for up to 5 min): " in (
            stderr
        )
        assert re.search(rf"INFO reached the job of run {run_id} again after \d+ s", stderr)
        assert out.splitlines()[0].startswith(f"train: run {run_id} succeeded; step 20/20")
        assert record(project, run_id)["state"] == "succeeded"
    finally:
        server.stop()


@CLIENTS
def test_an_outage_past_the_budget_gives_up_with_the_attach_hint_and_attach_collects_the_run(
    tmp_path: Path, remote: Path, client: SshClient
) -> None:
    server = make_sshd(tmp_path / "own_sshd")  # killed in the middle, so not the shared one
    server.start()
    try:
        project, env = ssh_project(tmp_path, server, remote, client, hold_at=3)
        with open(project / "overbrainer.toml", "a") as file:
            file.write("reconnect_secs = 3\n")  # into [targets.box], the file's last table
        err = tmp_path / "train.err"
        train = start_train(project, env, err)
        try:
            wait_for(lambda: remote_steps(remote) >= 3, 30)
            server.outage()
            train.communicate(timeout=60)
        finally:
            train.kill()
            train.wait()
        run_id = only_run(project)
        stderr = err.read_text()
        assert train.returncode == 1, stderr
        assert stderr.count(LOST) == 1, stderr
        assert f"INFO cannot reach the job of run {run_id} (trying again for up to 3 s): " in (
            stderr
        )
        last = stderr.splitlines()[-1]
        assert last.startswith(f"error: cannot reach the job of run {run_id} for 3 s: "), last
        assert "cannot reach target `box`" in last
        assert last.endswith(f"; follow it again with `overbrainer train attach {run_id}`")
        assert record(project, run_id)["state"] == "running"
        assert group_alive(record(project, run_id)["job"]["pid"])  # never killed by the loss
        server.start()
        release(tmp_path)
        attach = overbrainer(project, env, "train", "attach", run_id, timeout=90)
        assert attach.returncode == 0, attach.stderr
        assert record(project, run_id)["state"] == "succeeded"
    finally:
        server.stop()


def test_stop_snapshots_retrieves_the_checkpoint_and_resume_continues(
    sshd: Sshd, remote: Path, tmp_path: Path
) -> None:
    project, env = ssh_project(tmp_path, sshd, remote, STANDIN_STEPS="40", hold_at=3)
    run_id = detach_after(project, env, remote, tmp_path / "train.err", 3)
    stop = overbrainer(project, env, "train", "stop", run_id, timeout=90)
    assert stop.returncode == 0, stop.stderr
    saved = record(project, run_id)
    assert saved["state"] == "stopped"
    checkpoint = saved["snapshot"]["checkpoint"]
    local = project / "runs" / run_id
    assert (local / checkpoint).is_dir()
    assert sorted(p.name for p in (local / checkpoint).iterdir()) == sorted(
        p.name for p in (remote.resolve() / run_id / checkpoint).iterdir()
    )
    resumed = overbrainer(project, env, "train", "--resume-from", run_id, timeout=90)
    assert resumed.returncode == 0, resumed.stderr
    new_id = [p.name for p in (project / "runs").iterdir() if p.name not in (run_id, ".hf-cache")]
    new_id = [n for n in new_id if (project / "runs" / n / "run.json").exists()]
    assert len(new_id) == 1
    assert record(project, new_id[0])["resumed_from"] == run_id
    assert record(project, new_id[0])["state"] == "succeeded"
    step = saved["snapshot"]["step"]
    assert (remote.resolve() / new_id[0] / "resume" / f"checkpoint-{step}").is_dir()


def test_cancel_stops_the_remote_group_and_brings_its_files(
    sshd: Sshd, remote: Path, tmp_path: Path
) -> None:
    project, env = ssh_project(tmp_path, sshd, remote, hold_at=2)
    run_id = detach_after(project, env, remote, tmp_path / "train.err", 2)
    pid = record(project, run_id)["job"]["pid"]
    result = overbrainer(project, env, "train", "cancel", run_id, timeout=90)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"train: run {run_id} cancelled\n"
    assert record(project, run_id)["state"] == "cancelled"
    assert not group_alive(pid)
    assert (remote / run_id / "cancelled").exists()
    assert (project / "runs" / run_id / "job.log").is_file()


def test_an_unknown_client_a_missing_host_and_an_unknown_host_are_refused(
    sshd: Sshd, remote: Path, tmp_path: Path
) -> None:
    project, env = ssh_project(tmp_path, sshd, remote)
    putty = overbrainer(project, env | {"OVERBRAINER_SSH_CLIENT": "putty"}, "train")
    assert putty.returncode == 2
    assert putty.stderr.splitlines()[-1] == (
        "error: OVERBRAINER_SSH_CLIENT: must be openssh or builtin"
    )
    no_host = {k: v for k, v in env.items() if k != "OVERBRAINER_TARGETS__BOX__HOST"}
    missing = overbrainer(project, no_host, "train")
    assert missing.returncode == 2
    assert missing.stderr.splitlines()[-1] == (
        "error: targets.box.host is not set: set OVERBRAINER_TARGETS__BOX__HOST"
    )
    unknown = overbrainer(
        project, env | {"OVERBRAINER_TARGETS__BOX__HOST": "nowhere.invalid"}, "train"
    )
    assert unknown.returncode == 1
    assert unknown.stderr.splitlines()[-1].startswith("error: cannot reach target `box`: ")
    builtin = overbrainer(
        project,
        env
        | {
            "OVERBRAINER_TARGETS__BOX__HOST": "nowhere.invalid",
            "OVERBRAINER_SSH_CLIENT": "builtin",
        },
        "train",
    )
    assert builtin.returncode == 1
    assert builtin.stderr.splitlines()[-1].startswith(
        "error: cannot reach target `box`: cannot resolve host nowhere.invalid: "
    )
    assert not (project / "runs").exists() or not any((project / "runs").iterdir())


def test_stop_beside_a_follower_writes_the_request_over_ssh_and_the_follower_collects_it(
    sshd: Sshd, remote: Path, tmp_path: Path
) -> None:
    project, env = ssh_project(tmp_path, sshd, remote, hold_at=3)
    train = start_train(project, env, tmp_path / "train.err")
    try:
        wait_for(lambda: remote_steps(remote) >= 3, 30)
        run_id = only_run(project)
        stop = overbrainer(project, env, "train", "stop", run_id, timeout=60)
        out, _ = train.communicate(timeout=60)
    finally:
        train.kill()
        train.wait()
    assert stop.returncode == 0, stop.stderr
    assert stop.stdout == (
        f"train: overbrainer (pid {train.pid}) is using this project: if it follows run "
        f"{run_id}, it collects the snapshot; if not, collect it with "
        f"`overbrainer train attach {run_id}`\n"
    )
    assert (remote / run_id / "snapshot.request").read_text() == "requested\n"
    assert train.returncode == 0, (tmp_path / "train.err").read_text()
    assert f"train: run {run_id} stopped at step" in out
    saved = record(project, run_id)
    assert saved["state"] == "stopped"
    assert (project / "runs" / run_id / saved["snapshot"]["checkpoint"]).is_dir()
