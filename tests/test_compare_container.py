"""`overbrainer compare` on a target with `runtime = "docker"`: the job in the target's container.

There is no container engine here: tests/standin/container_standin.py stands in for `docker`
and `podman` (it records each call and runs the `run` command natively, in a session of its
own, with the mounts' container paths rewritten to host paths; `stop` and `rm -f` signal that
session). So these tests check the command lines and what the job sees through them, with the
real llama-server answering, not a real engine.
"""

from __future__ import annotations

import collections.abc
import json
import os
import shutil
import signal
from pathlib import Path
from typing import cast

import pytest
import trio

from overbrainer.compare.compare_job import CompareJob, compare_job, model_path
from overbrainer.compare.job import compares_of, create_compare, job_env
from overbrainer.compare.plan import plan_compare
from overbrainer.compare.setup import CompareSetup
from overbrainer.config import load_settings
from overbrainer.config.settings import (
    DEFAULT_IMAGE,
    Compare,
    Engine,
    Runtime,
)
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.events.bus import open_event_bus
from overbrainer.events.interrupt import Interrupt
from overbrainer.targets import LocalTarget, SshTarget
from overbrainer.targets.executor import Executor
from overbrainer.targets.host_machine import HostMachine, host_runtime
from overbrainer.targets.job_script import Engine as JobEngine
from overbrainer.targets.llama_cpp import resolve_pin
from overbrainer.targets.local_executor import LocalExecutor
from overbrainer.training.job_lifecycle import follow_to_end
from overbrainer.training.run_store import Runs
from tests.compare_support import (
    RUN_ID,
    compare_env,
    make_compare_project,
    scripted_judge,
    standin_release,
)
from tests.container_support import (
    STATE_ENV,
    calls,
    install_engines,
    kill_containers,
    run_options,
)
from tests.llama_support import LlamaRelease
from tests.pipeline_support import overbrainer, start, wait_until
from tests.sshd_support import ALIAS, Sshd, kill_jobs_under, make_sshd
from tests.train_helpers import group_alive, kill_jobs, wait_for

COMPARES = f"runs/{RUN_ID}/compares"
GGUF = "output/gguf/tiny-Q8_0.gguf"
TOKEN = "hf_SecretTokenValue123"


@pytest.fixture
def engine_state(tmp_path: Path) -> collections.abc.Iterator[Path]:
    state = tmp_path / "engine"
    yield state
    kill_containers(state)
    kill_jobs(tmp_path)


def _in_container(root: Path, engine: str, extra: str = "") -> None:
    """Make the project's local target run its jobs with `engine` and image `img:1` (and the
    `extra` settings)."""
    toml = root / "overbrainer.toml"
    native = 'kind = "local"\nruntime = "native"\n'
    assert native in toml.read_text()
    docker = f'kind = "local"\nruntime = "docker"\nengine = "{engine}"\nimage = "img:1"\n{extra}'
    toml.write_text(toml.read_text().replace(native, docker))


def _env(base: dict[str, str], tmp_path: Path, state: Path) -> dict[str, str]:
    """`base` with the stand-in engines first on PATH and a secret the job must never see."""
    engines = install_engines(tmp_path / "bin", state)
    path = f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"
    return {**base, **engines, "PATH": path, "OVERBRAINER_HF_TOKEN": TOKEN}


def _compare_dir(root: Path) -> Path:
    (found,) = (root / COMPARES).iterdir()
    return found


def _running(pid: int) -> bool:
    """Whether `pid` runs (a zombie whose parent is gone and was never reaped does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _argvs(state: Path, engine: str) -> list[list[str]]:
    recorded = calls(state)
    assert all(c["engine"] == engine for c in recorded), recorded
    return [c["argv"] for c in recorded]


async def test_the_compare_runs_in_the_named_container_and_it_is_removed_after(
    tmp_path: Path, llama_release: LlamaRelease, engine_state: Path
) -> None:
    root = make_compare_project(tmp_path / "p", questions=2)
    _in_container(root, "docker", 'gpus = "all"\n')
    cache = tmp_path / "cache"
    env = _env(compare_env(llama_release, cache), tmp_path, engine_state)
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(root, "compare", url=stub.url, env=env, limit=240)
    assert result.code == 0, result.stderr
    folder = _compare_dir(root)
    assert result.out_lines == [f"{COMPARES}/{folder.name}/compare.md"]
    name = f"overbrainer-{RUN_ID}-{folder.name}"
    run_dir = (root / "runs" / RUN_ID).resolve()
    runs = run_dir.parent

    # One `run` of the image, then the removal of its name once the job has ended.
    run_argv, *after = _argvs(engine_state, "docker")
    assert after == [["rm", "-f", name]]
    assert run_argv[:4] == ["run", "--rm", "--name", name]
    options = run_options(run_argv)
    assert options["-v"] == [
        f"{run_dir}:/workspace/run",
        f"{runs}/.hf-cache:/workspace/hf-cache",
        f"{cache}:/workspace/cache",
    ]
    inside = f"/workspace/run/compares/{folder.name}"
    assert options["-w"] == [inside]
    assert options["--gpus"] == ["all"]  # `gpus = "all"`
    assert options["--user"] == [f"{os.getuid()}:{os.getgid()}"]
    assert "--init" in options
    assert "-p" not in options and "--publish" not in options  # the port stays inside
    passed = dict(item.partition("=")[::2] for item in options["-e"])
    assert [item for item in options["-e"] if item.startswith("OVERBRAINER_CACHE")] == [
        "OVERBRAINER_CACHE=/workspace/cache"
    ]
    assert passed["OVERBRAINER_COMPARE_MODEL"] == f"/workspace/run/{GGUF}"
    assert passed["OVERBRAINER_METRICS"] == f"{inside}/metrics.jsonl"
    assert passed["OVERBRAINER_COMPARE_MAX_TOKENS"] == "8"
    assert {k: passed[k] for k in llama_release.env()} == llama_release.env()
    assert all("=" in item for item in options["-e"])  # no variable passed from our environment
    assert not [k for k in passed if k.endswith(("_TOKEN", "_KEY"))]
    image, *job_command = options[""]
    assert image == "img:1" != DEFAULT_IMAGE
    assert job_command[:2] == ["sh", "-c"]
    assert job_command[2].endswith("&& 'sh' 'compare.sh'\n) & wait $!")
    assert TOKEN not in (engine_state / "calls.jsonl").read_text()

    # The real llama-server answered inside; its build went to the mounted cache.
    answers = [json.loads(x) for x in (folder / "child_answers.jsonl").read_text().splitlines()]
    assert [a["id"] for a in answers] == ["q0", "q1"]
    assert all("error" not in a and a["output_tokens"] > 0 for a in answers)
    assert (cache / "llama.cpp" / "b0test" / "ubuntu-x64" / "llama-server").is_file()
    record = json.loads((folder / "run.json").read_text())
    assert record["state"] == "succeeded"
    assert record["job"]["container"] == {"engine": "docker", "name": name}
    assert not list((engine_state / "containers").iterdir())
    assert (folder / "compare.md").is_file()


@pytest.mark.sigint
async def test_ctrl_c_stops_and_removes_the_container(tmp_path: Path, engine_state: Path) -> None:
    root = make_compare_project(tmp_path / "p", questions=2)
    _in_container(root, "podman")
    with standin_release(tmp_path / "release", mode="hang") as pin:
        base = {**pin, "OVERBRAINER_CACHE": str(tmp_path / "c"), "OVERBRAINER_TEST_POLL_S": "0.2"}
        env = _env(base, tmp_path, engine_state)
        async with open_stub(scripted_judge) as stub, trio.open_nursery() as nursery:
            process = await start(nursery, root, "compare", url=stub.url, env=env)

            def answering() -> bool:
                logs = list((root / COMPARES).glob("*/server.log"))
                return bool(logs) and "standin: answering" in logs[0].read_text()

            await wait_until(answering, limit=60, every=0.1)
            os.kill(process.pid, signal.SIGINT)
            with trio.fail_after(90):
                await process.wait()
            assert stub.completions == []
    assert process.returncode == 130
    folder = _compare_dir(root)
    stderr = (root / "stderr.txt").read_text()
    assert stderr.splitlines()[-1] == (
        f"interrupted: compare {folder.name} of run {RUN_ID} cancelled"
    )
    name = f"overbrainer-{RUN_ID}-{folder.name}"
    argvs = _argvs(engine_state, "podman")
    assert argvs[0][:4] == ["run", "--rm", "--name", name]
    options = run_options(argvs[0])
    assert options["-v"][0].endswith(":/workspace/run:Z")
    # `gpus = "auto"` on a machine whose `nvidia-smi` lists no GPU: no GPU flag.
    assert "--gpus" not in options and "--device" not in options
    assert not (engine_state / "kills").exists()  # the stop reached the job: no kill
    assert argvs[1:] == [["stop", "-t", "30", name], ["rm", "-f", name]]
    assert not list((engine_state / "containers").iterdir())
    record = json.loads((folder / "run.json").read_text())
    assert record["state"] == "cancelled"
    assert record["job"]["container"] == {"engine": "podman", "name": name}
    wait_for(lambda: not _running(int((folder / "standin.pid").read_text())))
    assert not group_alive(record["job"]["pid"])


async def test_a_container_its_client_left_behind_is_removed(
    tmp_path: Path, engine_state: Path
) -> None:
    # The engine's client killed with its job (an OOM kill, a `kill -9`): the job is lost, but
    # its container would go on serving. Its name finds it, and `rm -f` ends it.
    root = make_compare_project(tmp_path / "p", questions=2)
    _in_container(root, "docker")
    with standin_release(tmp_path / "release", mode="hang") as pin:
        base = {**pin, "OVERBRAINER_CACHE": str(tmp_path / "c"), "OVERBRAINER_TEST_POLL_S": "0.2"}
        env = _env(base, tmp_path, engine_state)
        async with open_stub(scripted_judge) as stub, trio.open_nursery() as nursery:
            process = await start(nursery, root, "compare", url=stub.url, env=env)

            def answering() -> bool:
                logs = list((root / COMPARES).glob("*/server.log"))
                return bool(logs) and "standin: answering" in logs[0].read_text()

            await wait_until(answering, limit=60, every=0.1)
            folder = _compare_dir(root)
            server_pid = int((folder / "standin.pid").read_text())
            os.killpg(int((folder / "job.pid").read_text()), signal.SIGKILL)
            with trio.fail_after(60):
                await process.wait()
            assert stub.completions == []
    assert process.returncode == 1
    name = f"overbrainer-{RUN_ID}-{folder.name}"
    assert (root / "stderr.txt").read_text().splitlines()[-1] == (
        f"error: compare {folder.name} of run {RUN_ID} failed: its job ended without an exit "
        f"code; its server log is {COMPARES}/{folder.name}/server.log"
    )
    assert _argvs(engine_state, "docker")[1:] == [["rm", "-f", name]]
    assert not list((engine_state / "containers").iterdir())
    wait_for(lambda: not _running(server_pid))
    assert json.loads((folder / "run.json").read_text())["state"] == "failed"


async def test_a_follow_ended_from_outside_cancels_the_job_and_removes_its_container(
    tmp_path: Path, engine_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not Ctrl-C (the race returns None) but the follow itself ending by an error or an outer
    # cancel scope: the job is cancelled and its container removed, shielded, before it ends.
    root = make_compare_project(tmp_path / "p", questions=2)
    runs = Runs(root / "runs")
    target = LocalTarget(runtime=Runtime.DOCKER, engine=Engine.DOCKER, image="img:1")
    executor = LocalExecutor(runs.root)
    with standin_release(tmp_path / "release", mode="hang") as pin:
        for name, value in _env(pin, tmp_path, engine_state).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("OVERBRAINER_TEST_POLL_S", "0.2")
        plan = plan_compare(runs, root / "data" / "eval.jsonl", None, None)
        setup = create_compare(runs, plan, resolve_pin(), 42)
        folder = compares_of(runs.dir_of(setup.run)).dir_of(setup.compare)
        machine = HostMachine(executor, host_runtime(target), removes_container=True)
        settings = load_settings(root, environ={})
        job = CompareJob(settings, runs, setup, 256, "local")
        started = await job.start(machine, setup.compare)
        ended = False
        async with open_event_bus() as bus, trio.open_nursery() as nursery:

            async def follow_it() -> None:
                nonlocal ended
                try:
                    await follow_to_end(job, machine, started, bus, Interrupt())
                finally:
                    ended = True

            nursery.start_soon(follow_it)
            await wait_until(lambda: "standin: answering" in _text(folder / "server.log"), 60)
            nursery.cancel_scope.cancel()
    assert ended
    name = f"overbrainer-{RUN_ID}-{setup.compare}"
    assert _argvs(engine_state, "docker")[1:] == [["stop", "-t", "30", name], ["rm", "-f", name]]
    assert (folder / "cancelled").is_file()
    assert not list((engine_state / "containers").iterdir())
    wait_for(lambda: not _running(int((folder / "standin.pid").read_text())))


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


async def test_a_missing_engine_is_warned_about_before_the_compare_starts(
    tmp_path: Path,
) -> None:
    root = make_compare_project(tmp_path / "p", questions=1)
    _in_container(root, "docker")
    tools = tmp_path / "tools"  # what the job's wrapper needs, and no engine
    tools.mkdir()
    for tool in ("sh", "mkdir", "mv", "date", "cat", "rm"):
        found = shutil.which(tool)
        assert found is not None
        (tools / tool).symlink_to(found)
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(
            root, "compare", url=stub.url, env={"PATH": str(tools)}, limit=60
        )
        assert stub.completions == []
    assert result.code == 1, result.stderr
    folder = _compare_dir(root)
    lines = result.stderr.splitlines()
    assert lines[0].endswith(" WARN docker is not on PATH: the job of target `local` will fail")
    assert lines[-1] == (
        f"error: compare {folder.name} of run {RUN_ID} failed: its job exited with code 127; "
        f"its server log is {COMPARES}/{folder.name}/server.log"
    )
    assert "docker" in (folder / "job.log").read_text()
    assert json.loads((folder / "run.json").read_text())["state"] == "failed"


SSH_TARGET = """
[targets.box]
kind = "ssh"
runtime = "docker"
image = "img:1"
workdir = "{workdir}"
"""


def _ssh_setup(tmp_path: Path, state: Path) -> tuple[Sshd, Path, Path]:
    """An sshd of its own (the stand-in engine on the PATH of its sessions), a project whose
    run lives on its `box` target; the sshd, the project and the target's workdir."""
    engines = install_engines(tmp_path / "bin", state)
    server = make_sshd(tmp_path / "sshd")
    with open(server.root / "sshd_config", "a") as config:
        path = f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"
        config.write(f"SetEnv PATH={path} {STATE_ENV}={engines[STATE_ENV]}\n")
    workdir = (tmp_path / "remote").resolve()
    root = make_compare_project(
        tmp_path / "p", questions=2, target="box", remote_dir=workdir / RUN_ID
    )
    with open(root / "overbrainer.toml", "a") as file:
        file.write(SSH_TARGET.format(workdir=workdir))
    return server, root, workdir


async def test_an_ssh_compare_uploads_the_gguf_and_runs_in_the_container_there(
    tmp_path: Path, llama_release: LlamaRelease, engine_state: Path
) -> None:
    server, root, workdir = _ssh_setup(tmp_path, engine_state)
    remote_run = workdir / RUN_ID
    env = compare_env(
        llama_release,
        tmp_path / "unused-cache",
        {
            "OVERBRAINER_TARGETS__BOX__HOST": ALIAS,
            "OVERBRAINER_SSH_CONFIG": str(server.client_config),
        },
    )
    server.start()
    try:
        async with open_stub(scripted_judge) as stub:
            result = await overbrainer(root, "compare", url=stub.url, env=env, limit=240)
    finally:
        server.stop()
        kill_jobs_under(workdir)
    assert result.code == 0, result.stderr
    folder = _compare_dir(root)
    name = f"overbrainer-{RUN_ID}-{folder.name}"
    run_argv, *after = _argvs(engine_state, "docker")
    assert after == [["rm", "-f", name]]
    options = run_options(run_argv)
    assert options["--name"] == [name]
    assert options["-v"] == [
        f"{remote_run}:/workspace/run",
        f"{workdir}/.hf-cache:/workspace/hf-cache",
        f"{workdir}/.cache/overbrainer:/workspace/cache",
    ]
    assert options["-w"] == [f"/workspace/run/compares/{folder.name}"]
    passed = dict(item.partition("=")[::2] for item in options["-e"])
    assert passed["OVERBRAINER_COMPARE_MODEL"] == f"/workspace/run/{GGUF}"
    # The GGUF was uploaded into the run directory the container mounts; the answers came back.
    assert (remote_run / GGUF).read_bytes() == (root / "runs" / RUN_ID / GGUF).read_bytes()
    assert (workdir / ".cache/overbrainer/llama.cpp/b0test/ubuntu-x64/llama-server").is_file()
    answers = (folder / "child_answers.jsonl").read_text().splitlines()
    assert [json.loads(x)["id"] for x in answers] == ["q0", "q1"]
    record = json.loads((folder / "run.json").read_text())
    assert record["state"] == "succeeded"
    assert record["job"]["container"] == {"engine": "docker", "name": name}
    assert not list((engine_state / "containers").iterdir())


class _Where:
    """The three things a job plan reads of an executor: an SSH target's paths."""

    local = False
    workdir = "/srv/ob"
    home = "/home/u"


WHERE = cast(Executor, _Where())


def _machine(target: SshTarget) -> HostMachine:
    """An SSH target's machine, as far as a job's plan reads it."""
    return HostMachine(WHERE, host_runtime(target))


def _setup(compare_id: str) -> CompareSetup:
    return CompareSetup(
        run="run1",
        compare=compare_id,
        gguf=GGUF,
        gguf_sha256="0" * 64,
        quantize="Q8_0",
        llama_cpp="b1",
        base_model=None,
        seed=42,
        created="2026-12-03T13:00:00Z",
        questions=(),
    )


def test_an_ssh_podman_compare_is_the_export_line_in_the_compare_directory() -> None:
    target = SshTarget(runtime=Runtime.DOCKER, engine=Engine.PODMAN, image="img:1")
    setup = _setup("compare_20261203-130000")
    env = job_env(
        Compare(),
        resolve_pin({}),
        root="/srv/ob/run1/compares/compare_20261203-130000",
        model=model_path(_machine(target), "/srv/ob/run1", GGUF),
        context=256,
        cache="/srv/ob/.cache/overbrainer",
        environ={},
    )
    plan = compare_job(_machine(target), env, setup, "/srv/ob/run1")
    name = "overbrainer-run1-compare_20261203-130000"
    assert plan.container == (JobEngine.PODMAN, name)
    job = "/workspace/run/compares/compare_20261203-130000"
    assert plan.commands.startswith(
        "mkdir -p -- '/srv/ob/.hf-cache' '/srv/ob/.cache/overbrainer' && podman run --rm "
        f"--name '{name}' --init "
        "$(nvidia-smi -L 2>/dev/null | grep -q '^GPU' && echo '--device nvidia.com/gpu=all') "
        '$([ "$(id -u)" = 0 ] || echo --userns=keep-id) -e HOME=/tmp '
        "--security-opt=label=disable "
        "--ulimit host --ipc=host -v '/srv/ob/run1:/workspace/run:Z' "
        "-v '/srv/ob/.hf-cache:/workspace/hf-cache:z' "
        "-v '/srv/ob/.cache/overbrainer:/workspace/cache:z' "
        f"-e OVERBRAINER_CACHE=/workspace/cache -w '{job}' -e HF_HOME=/workspace/hf-cache "
        "-e 'AXOLOTL_DO_NOT_TRACK=1' -e 'PYTHONPATH=/workspace/run/plugin' "
        f"-e 'OVERBRAINER_METRICS={job}/metrics.jsonl' "
        f"-e 'OVERBRAINER_SNAPSHOT={job}/snapshot.request' "
        f"-e 'OVERBRAINER_COMPARE_MODEL=/workspace/run/{GGUF}' "
    )
    assert "/srv/ob/.cache/overbrainer'" not in plan.commands.split(" && podman ", 1)[1]
    assert " 'img:1' sh -c '" in plan.commands
    assert plan.commands.endswith("'\\''sh'\\'' '\\''compare.sh'\\''\n) & wait $!'")


def test_a_native_compare_runs_in_place_with_the_system_sh() -> None:
    target = SshTarget(runtime=Runtime.NATIVE, venv="~/v")
    assert model_path(_machine(target), "/srv/ob/run1", GGUF) == f"/srv/ob/run1/{GGUF}"
    env = {"OVERBRAINER_CACHE": "/srv/ob/.cache/overbrainer", "X": "1"}
    plan = compare_job(_machine(target), env, _setup("compare_1"), "/srv/ob/run1")
    assert plan.container is None
    assert "podman" not in plan.commands and "docker" not in plan.commands
    assert " && export OVERBRAINER_CACHE='/srv/ob/.cache/overbrainer' && " in plan.commands
    assert " && export PATH='/home/u/v/bin'\"${PATH:+:$PATH}\" && " in plan.commands
    assert plan.commands.endswith(" && 'sh' 'compare.sh'")
