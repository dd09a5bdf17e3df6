"""`overbrainer export` on a local target with `runtime = "docker"`: the job in a container.

There is no container engine here: tests/standin/container_standin.py stands in for `docker`
and `podman`. It records each call, runs the `run` command natively with the mounts' container
paths rewritten to their host paths (in the arguments, the working directory and the `-e`
values: an approximation of a container, documented in the stand-in) and answers `stop`/`kill`
by signalling the process group it started. So these tests check the command line the job runs
and what the job sees through it, not a real engine. A fake `python3` (the job's first program
on a full model: the fetch of the llama.cpp source) records what it sees, writes the export's
`.part` and hangs, standing for an export in progress. The real conversion in a container is in
test_export_gguf.py (torch).
"""

from __future__ import annotations

import collections.abc
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

import attrs
import pytest

from overbrainer.config.settings import DEFAULT_IMAGE, Engine, Runtime
from overbrainer.export.job import export_spec
from overbrainer.targets import SshTarget
from overbrainer.targets.executor import Executor
from overbrainer.targets.export_job_script import export_env
from overbrainer.targets.host_machine import HostMachine, host_runtime
from overbrainer.targets.job_script import Engine as JobEngine
from overbrainer.targets.llama_cpp import resolve_pin
from overbrainer.targets.machine import JobPlan
from overbrainer.training.run_store import RunRecord, RunState
from tests.container_support import calls, install_engines, kill_containers, run_options
from tests.export_support import add_run
from tests.train_helpers import command, group_alive, kill_jobs, make_project, standin_env, wait_for

RUN = "my_project_20261203-120000"
TOKEN = "hf_SecretTokenValue123"


@pytest.fixture
def project(tmp_path: Path) -> collections.abc.Iterator[Path]:
    root = make_project(tmp_path / "p")
    yield root
    kill_containers(tmp_path / "engine")
    kill_jobs(root)


def use_container(project: Path, engine: str) -> None:
    """Make the project's local target run its jobs with `engine`."""
    toml = project / "overbrainer.toml"
    text = toml.read_text()
    extra = f'runtime = "docker"\nengine = "{engine}"\nimage = "img:1"\n'
    toml.write_text(text.replace('runtime = "native"           #', extra + "#", 1))
    assert extra in toml.read_text()


def hanging_python(bin_dir: Path) -> None:
    """A `python3` that records its cwd and environment, writes the export's `.part`, hangs."""
    script = bin_dir / "python3"
    record = (
        "import json, os, sys; json.dump({'cwd': os.getcwd(), 'env': dict(os.environ)}, "
        "open(os.environ['STANDIN_SEEN'], 'w'))"
    )
    script.write_text(
        "#!/bin/sh\n"
        f'{sys.executable} -c "{record}" || exit 1\n'
        'echo partial > "output/gguf/$OVERBRAINER_EXPORT_NAME-$OVERBRAINER_EXPORT_QUANTIZE'
        '.gguf.part" || exit 1\n'
        "exec sleep 600\n"
    )
    script.chmod(0o755)


@pytest.mark.sigint
@pytest.mark.parametrize("engine", ["docker", "podman"])
def test_the_export_runs_in_the_named_container_and_ctrl_c_stops_it(
    project: Path, tmp_path: Path, engine: str
) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    run_dir = add_run(project, model)
    use_container(project, engine)
    state = tmp_path / "engine"
    seen = tmp_path / "seen.json"
    bin_dir = tmp_path / "bin"
    env = standin_env(bin_dir, STANDIN_SEEN=str(seen), OVERBRAINER_HF_TOKEN=TOKEN)
    env.update(install_engines(bin_dir, state))
    hanging_python(bin_dir)
    err = tmp_path / "err.txt"
    with err.open("w") as stderr:
        process = subprocess.Popen(
            command(project, "export", RUN, "--quantize", "Q8_0"),
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        deadline = time.monotonic() + 60
        while not list((run_dir / "exports").glob("*/output/gguf/*.part")):
            assert process.poll() is None, err.read_text()
            assert time.monotonic() < deadline, err.read_text()
            time.sleep(0.05)
        wait_for(seen.exists)
        wait_for(lambda: seen.stat().st_size > 0)
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=90)
    job = next((run_dir / "exports").iterdir())
    name = f"overbrainer-{RUN}-{job.name}"
    runs = (project / "runs").resolve()

    # The command line: the one `run` the job made, with the mounts, the workdir and the env.
    recorded = calls(state)
    assert recorded[0]["engine"] == engine
    argv = recorded[0]["argv"]
    assert argv[:4] == ["run", "--rm", "--name", name]
    options = run_options(argv)
    label, cache_label = ("", "") if engine == "docker" else (":Z", ":z")
    assert options["-v"] == [
        f"{run_dir.resolve()}:/workspace/run{label}",
        f"{runs}/.hf-cache:/workspace/hf-cache{cache_label}",
        f"{runs}/.cache:/workspace/cache{cache_label}",
    ]
    assert options["-w"] == [f"/workspace/run/exports/{job.name}"]
    passed = dict(item.partition("=")[::2] for item in options["-e"])
    assert passed["OVERBRAINER_CACHE"] == "/workspace/cache"
    assert [v for k, v in passed.items() if k == "OVERBRAINER_CACHE"] == ["/workspace/cache"]
    assert passed["OVERBRAINER_EXPORT_NAME"] == RUN
    assert passed["OVERBRAINER_EXPORT_QUANTIZE"] == "Q8_0"
    assert passed["OVERBRAINER_EXPORT_MODEL"] == "../../output"
    assert passed["OVERBRAINER_EXPORT_CONFIG"] == "../../axolotl.yaml"
    assert passed["OVERBRAINER_METRICS"] == f"/workspace/run/exports/{job.name}/metrics.jsonl"
    pin = resolve_pin({}).job_env()
    assert len(pin) == 13
    assert {k: passed[k] for k in pin} == pin
    assert not [k for k in passed if "TOKEN" in k]
    image, *job_command = options[""]
    assert image == "img:1" != DEFAULT_IMAGE
    assert job_command[:2] == ["sh", "-c"]
    assert job_command[2].endswith("&& 'sh' 'export.sh'\n) & wait $!")
    # `gpus = "auto"` where `nvidia-smi` lists a GPU (standin_env's): all GPUs.
    gpus = {"--gpus": ["all"]} if engine == "docker" else {"--device": ["nvidia.com/gpu=all"]}
    assert {k: v for k, v in options.items() if k in ("--gpus", "--device")} == gpus
    assert "--init" in options

    # What the job saw inside: its directory, the run's model and the cache, as mounted.
    inside = json.loads(seen.read_text())
    assert inside["cwd"] == str(job.resolve())
    assert inside["env"]["OVERBRAINER_CACHE"] == f"{runs}/.cache"
    assert (job / inside["env"]["OVERBRAINER_EXPORT_MODEL"] / "config.json").is_file()
    assert "OVERBRAINER_HF_TOKEN" not in inside["env"]
    assert (runs / ".cache" / "llama.cpp" / resolve_pin({}).tag).is_dir()

    # Ctrl-C: the named container is stopped, nothing half-written is left.
    assert process.returncode == 130, err.read_text()
    assert out == ""
    assert err.read_text().splitlines()[-1] == f"export {job.name} of run {RUN} was cancelled"
    assert [c["argv"] for c in recorded[1:]] == [["stop", "-t", "30", name]]
    assert not (state / "kills").exists()  # the stop reached the job: no kill
    assert all(c["engine"] == engine for c in recorded)
    assert not list((state / "containers").iterdir())
    record = json.loads((job / "run.json").read_text())
    assert record["state"] == "cancelled"
    assert record["job"]["container"] == {"engine": engine, "name": name}
    assert not list(run_dir.rglob("*.part"))
    assert not (job / "export-work").exists()
    assert not (run_dir / "output" / "gguf").exists()
    wait_for(lambda: not group_alive(record["job"]["pid"]))
    everything = err.read_text() + "".join(
        p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file()
    )
    assert TOKEN not in everything
    assert TOKEN not in (state / "calls.jsonl").read_text()


class _Where:
    """The three things a machine's plan reads of an executor: an SSH target's paths."""

    local = False
    workdir = "/srv/ob"
    home = "/home/u"


def _records() -> tuple[RunRecord, RunRecord]:
    run = RunRecord(
        id="run1",
        target="gpu",
        created="2026-12-03T12:00:00Z",
        remote_dir="/srv/ob/run1",
        job=None,
        state=RunState.SUCCEEDED,
    )
    export = attrs.evolve(
        run,
        id="export_20261203-130000",
        remote_dir="/srv/ob/run1/exports/export_20261203-130000",
        state=RunState.PREPARING,
    )
    return run, export


def export_job(
    target: SshTarget, env: dict[str, str], *, run: RunRecord, export: RunRecord
) -> JobPlan:
    """The export's commands as an SSH target's machine plans them."""
    machine = HostMachine(cast(Executor, _Where()), host_runtime(target))
    return machine.plan(export_spec(machine, env, run=run, export=export))


def _env() -> dict[str, str]:
    return export_env(
        name="run1",
        quantize="Q4_K_M",
        model="../../output",
        config="../../axolotl.yaml",
        cache="/srv/ob/.cache",
        environ={},
    )


def test_an_ssh_podman_export_is_the_training_run_line_in_the_export_directory() -> None:
    run, export = _records()
    target = SshTarget(
        runtime=Runtime.DOCKER,
        engine=Engine.PODMAN,
        image="img:1",
        gpus="all",
        container_user="image",
    )
    plan = export_job(target, _env(), run=run, export=export)
    name = "overbrainer-run1-export_20261203-130000"
    assert plan.container == (JobEngine.PODMAN, name)
    job = "/workspace/run/exports/export_20261203-130000"
    assert plan.commands.startswith(
        "mkdir -p -- '/srv/ob/.hf-cache' '/srv/ob/.cache' && podman run --rm --name "
        f"'{name}' --init --device nvidia.com/gpu=all --security-opt=label=disable --ulimit host "
        "--ipc=host -v '/srv/ob/run1:/workspace/run:Z' "
        "-v '/srv/ob/.hf-cache:/workspace/hf-cache:z' -v '/srv/ob/.cache:/workspace/cache:z' "
        f"-e OVERBRAINER_CACHE=/workspace/cache -w '{job}' -e HF_HOME=/workspace/hf-cache "
        "-e 'AXOLOTL_DO_NOT_TRACK=1' -e 'PYTHONPATH=/workspace/run/plugin' "
        f"-e 'OVERBRAINER_METRICS={job}/metrics.jsonl' "
        f"-e 'OVERBRAINER_SNAPSHOT={job}/snapshot.request' -e 'OVERBRAINER_EXPORT_NAME=run1' "
        "-e 'OVERBRAINER_EXPORT_QUANTIZE=Q4_K_M' -e 'OVERBRAINER_EXPORT_MODEL=../../output' "
        "-e 'OVERBRAINER_EXPORT_CONFIG=../../axolotl.yaml' -e 'OVERBRAINER_LLAMA_CPP=b"
    )
    assert "/srv/ob/.cache'" not in plan.commands.split(" && podman ", 1)[1]
    assert plan.commands.endswith(
        " 'img:1' sh -c 'trap '\\''trap \"\" TERM INT; kill -TERM 0 2>/dev/null; wait; "
        "exit 143'\\'' TERM INT; ( trap '\\''exit 143'\\'' TERM; "
        '{ printf \'\\\'\'{"event":"stage","name":'
        '"%s","time":%s}\\n\'\\\'\' export "$(date +%s)" >> '
        "'\\''metrics.jsonl'\\'' || :; } && '\\''sh'\\'' "
        "'\\''export.sh'\\''\n) & wait $!'"
    )


def test_a_native_ssh_export_runs_in_place_with_the_venv_on_path() -> None:
    run, export = _records()
    target = SshTarget(runtime=Runtime.NATIVE, venv="~/v")
    plan = export_job(target, _env(), run=run, export=export)
    assert plan.container is None
    assert "podman" not in plan.commands and "docker" not in plan.commands
    job = "/srv/ob/run1/exports/export_20261203-130000"
    for step in (
        f"export OVERBRAINER_METRICS='{job}/metrics.jsonl'",
        "export OVERBRAINER_EXPORT_MODEL='../../output'",
        "export PATH='/home/u/v/bin'\"${PATH:+:$PATH}\"",
        "export OVERBRAINER_CACHE='/srv/ob/.cache'",
    ):
        assert f" && {step} && " in plan.commands
    assert plan.commands.endswith(" && 'sh' 'export.sh'")


def test_a_missing_engine_is_warned_about_and_the_failure_names_the_log(
    project: Path, tmp_path: Path
) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    run_dir = add_run(project, model)
    use_container(project, "podman")
    tools = tmp_path / "tools"  # a PATH with what the job's wrapper needs and no engine
    tools.mkdir()
    for tool in ("sh", "mkdir", "mv", "date", "cat", "rm"):
        found = shutil.which(tool)
        assert found is not None
        (tools / tool).symlink_to(found)
    env = standin_env(tmp_path / "bin")
    env["PATH"] = str(tools)
    result = subprocess.run(
        command(project, "export", RUN), env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1, result.stderr
    job = next((run_dir / "exports").iterdir())
    lines = result.stderr.splitlines()
    assert any(
        line.endswith("WARN podman is not on PATH: the job of target `local` will fail")
        for line in lines
    ), result.stderr
    assert lines[-1] == (
        f"error: export {job.name} of run {RUN} failed: its job exited with code 127; its log "
        f"is runs/{RUN}/exports/{job.name}/job.log"
    )
    assert "podman" in (job / "job.log").read_text()
    assert json.loads((job / "run.json").read_text())["state"] == "failed"


def test_a_gguf_the_user_cannot_move_is_copied_into_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A rootful container job leaves its folders owned by root: the rename out of them is
    # refused (here simulated: the tests run as root, where permissions do not bite).
    from overbrainer.export import deliver as delivery

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "axolotl.yaml").write_text("sequence_len: 64\n")
    job_dir = run_dir / "exports" / "export_20261203-130000"
    source = job_dir / "output" / "gguf" / "r-F16.gguf"
    source.parent.mkdir(parents=True)
    source.write_bytes(b"GGUF" + b"\0" * 60)
    real = os.replace

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if Path(src) == source:
            raise PermissionError(13, "Permission denied")
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    delivered = delivery.deliver("r", run_dir, job_dir, "r-F16.gguf", "F16", "b1")
    target = run_dir / "output" / "gguf" / "r-F16.gguf"
    assert target.read_bytes() == b"GGUF" + b"\0" * 60
    assert delivered.record.size == 64
    assert sorted(p.name for p in target.parent.iterdir()) == ["Modelfile", "r-F16.gguf"]
