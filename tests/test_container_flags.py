"""The container command of a job: `--gpus` only where the target has GPUs (`gpus`), the job
run as the target's user (`container_user`), and `--init` with a stop passed on to the job so
it ends without a kill. Run through the stand-in engine (tests/standin/container_standin.py):
this machine has no container engine with a daemon, so the real `docker run` is not run."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from overbrainer.model.train_metric import JobStage
from overbrainer.targets import Command, ContainerJob, Engine, container_commands
from tests.container_support import calls, install_engines, kill_containers, run_options
from tests.pipeline_support import wait_until

# A job that says when it runs, and writes `term` when TERM reaches it, then ends (exit 0).
JOB = (
    "import pathlib, signal, sys, time\n"
    "def stop(*_):\n"
    "    pathlib.Path('term').write_text('term')\n"
    "    sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, stop)\n"
    "pathlib.Path('started').write_text('started')\n"
    "time.sleep(120)\n"
)


def job(engine: Engine, run_dir: Path, **settings: str) -> ContainerJob:
    """A job of run `r1` whose one command runs JOB (with this machine's Python)."""
    return ContainerJob(
        engine,
        run_id="r1",
        run_dir=str(run_dir),
        cache=str(run_dir.parent / "cache"),
        image="img:1",
        commands=[Command(JobStage.TRAIN, sys.executable, ("-c", JOB), from_venv=False)],
        env={},
        **settings,
    )


@pytest.fixture
def engines(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The stand-in engines first on PATH, and a `bin/` for a stand-in `nvidia-smi`."""
    state = tmp_path / "engine"
    variables = install_engines(tmp_path / "bin", state)
    env = {**os.environ, **variables, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    yield env
    kill_containers(state)


def with_gpu(tmp_path: Path) -> None:
    """A stand-in `nvidia-smi` that lists one GPU, as the NVIDIA driver's does."""
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA A40 (UUID: GPU-0)'\n")
    smi.chmod(0o755)


def run_argv(tmp_path: Path) -> list[str]:
    """The argv of the one `run` the stand-in engine was given."""
    runs = [call["argv"] for call in calls(tmp_path / "engine") if call["argv"][0] == "run"]
    assert len(runs) == 1
    return list(runs[0])


def start_job(text: str, env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sh", "-c", text], env=env, cwd=cwd, start_new_session=True)


@pytest.mark.parametrize("engine", [Engine.DOCKER, Engine.PODMAN])
@pytest.mark.parametrize("gpu", [True, False])
async def test_auto_gives_the_gpus_only_where_nvidia_smi_lists_one(
    tmp_path: Path, engines: dict[str, str], engine: Engine, gpu: bool
) -> None:
    if gpu:
        with_gpu(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    text = container_commands(job(engine, run_dir))
    process = start_job(text, engines, tmp_path)
    await wait_until(lambda: (run_dir / "started").exists(), limit=60)
    argv = run_argv(tmp_path)
    options = run_options(argv)
    assert argv[:5] == ["run", "--rm", "--name", "overbrainer-r1", "--init"]
    if engine is Engine.DOCKER:
        assert options.get("--gpus") == (["all"] if gpu else None)
        assert options["--user"] == [f"{os.getuid()}:{os.getgid()}"]
    else:
        assert options.get("--device") == (["nvidia.com/gpu=all"] if gpu else None)
        assert ("--userns=keep-id" in options) == (os.getuid() != 0)
    assert "HOME=/tmp" in options["-e"]
    process.kill()
    process.wait()


def test_each_setting_s_words() -> None:
    run_dir = Path("/r/run")
    docker = {
        "none": container_commands(job(Engine.DOCKER, run_dir, gpus="none")),
        "all": container_commands(job(Engine.DOCKER, run_dir, gpus="all")),
        "list": container_commands(job(Engine.DOCKER, run_dir, gpus="0,1")),
        "image": container_commands(job(Engine.DOCKER, run_dir, user="image")),
        "named": container_commands(job(Engine.DOCKER, run_dir, user="1000:1000")),
    }
    assert "--gpus" not in docker["none"] and "nvidia-smi" not in docker["none"]
    assert " --gpus all " in docker["all"] and "nvidia-smi" not in docker["all"]
    assert " --gpus '\"device=0,1\"' " in docker["list"]
    assert "--user" not in docker["image"] and "HOME=/tmp" not in docker["image"]
    assert " --user '1000:1000' -e HOME=/tmp " in docker["named"]
    podman = container_commands(job(Engine.PODMAN, run_dir, gpus="0,1"))
    assert " --device nvidia.com/gpu=0 --device nvidia.com/gpu=1 " in podman
    for text in (*docker.values(), podman):
        assert " --init " in text


@pytest.mark.parametrize("engine", [Engine.DOCKER, Engine.PODMAN])
async def test_a_stop_reaches_the_job_and_ends_it_without_a_kill(
    tmp_path: Path, engines: dict[str, str], engine: Engine
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    process = start_job(container_commands(job(engine, run_dir)), engines, tmp_path)
    await wait_until(lambda: (run_dir / "started").exists(), limit=60)
    with trio.fail_after(60):
        stopped = await trio.run_process(
            [engine.value, "stop", "-t", "30", "overbrainer-r1"], env=engines, capture_stdout=True
        )
    assert stopped.stdout == b"overbrainer-r1\n"
    assert (run_dir / "term").read_text() == "term"  # the job's own TERM handler ran
    assert not (tmp_path / "engine" / "kills").exists()  # and nothing was killed
    with trio.fail_after(30):
        code = await trio.to_thread.run_sync(process.wait)
    assert code == 143
