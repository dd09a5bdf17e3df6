"""A project with training data, a stand-in `axolotl` on PATH, and the `overbrainer` command."""

from __future__ import annotations

import collections.abc
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from overbrainer.project.init import init_project
from overbrainer.targets import local as local_job

STANDIN = Path(__file__).parent / "standin" / "axolotl_standin.py"
EXAMPLE = '{"id":"q1","topic":"t","subtopic":"s","messages":[],"meta":{}}\n'


class Lines:
    """A result sink that keeps the lines and results a flow hands it (and ignores run IDs)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.results: dict[str, object] = {}

    def line(self, text: str) -> None:
        self.lines.append(text)

    def result(self, key: str, value: object) -> None:
        self.results[key] = value

    def run_created(self, run_id: str) -> None:
        pass

    def run_stopped(self, run_id: str) -> None:
        pass


def make_project(root: Path, *, eval_lines: int = 1) -> Path:
    """A new project at `root` with one train example and `eval_lines` eval examples."""
    init_project(root)
    (root / "data").mkdir()
    (root / "data" / "train.jsonl").write_text(EXAMPLE)
    (root / "data" / "eval.jsonl").write_text(EXAMPLE * eval_lines)
    return root


def standin_gpu(bin_dir: Path) -> None:
    """An `nvidia-smi` in `bin_dir` that lists one GPU: the stand-in trains as on a GPU box."""
    script = bin_dir / "nvidia-smi"
    script.write_text("#!/bin/sh\necho 'GPU 0: Stand-in GPU (UUID: GPU-0)'\n")
    script.chmod(0o755)


def standin_env(bin_dir: Path, **knobs: str) -> dict[str, str]:
    """This environment without OVERBRAINER_* and with the stand-in (and a GPU) first on PATH."""
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "axolotl"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} {STANDIN} "$@"\n')
    script.chmod(0o755)
    standin_gpu(bin_dir)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERBRAINER_", "STANDIN_"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["OVERBRAINER_TEST_POLL_S"] = "0.05"
    env["STANDIN_PACE"] = "0.02"
    env["STANDIN_EVAL_EVERY"] = "5"
    env.update(knobs)
    return env


def hold_at(tmp_path: Path, step: int) -> dict[str, str]:
    """Stand-in knobs that keep the job at `step` until `release(tmp_path)`, still honouring
    stop requests, so a test acts on a job that cannot finish first however loaded the machine."""
    return {"STANDIN_HOLD": f"{step}:{tmp_path / 'release'}"}


def release(tmp_path: Path) -> None:
    """Let a job held by `hold_at` go on training."""
    (tmp_path / "release").touch()


def axolotl_on_path(monkeypatch: pytest.MonkeyPatch, bin_dir: Path) -> None:
    """This process's PATH (which the commands it starts inherit) with a do-nothing `axolotl`
    first: `config check` of a project whose training target is this machine passes."""
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "axolotl"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")


def command(project: Path, *args: str) -> list[str]:
    """The `overbrainer` command line on `project`."""
    return [sys.executable, "-m", "overbrainer", "-C", str(project), *args]


def overbrainer(
    project: Path, env: dict[str, str], *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run `overbrainer` to its end."""
    return subprocess.run(
        command(project, *args), env=env, capture_output=True, text=True, timeout=timeout
    )


def start(project: Path, env: dict[str, str], err: Path, *args: str) -> subprocess.Popen[str]:
    """Start `overbrainer` in the background, its stderr to `err`."""
    with open(err, "w") as stderr:
        return subprocess.Popen(
            command(project, *args), env=env, stdout=subprocess.PIPE, stderr=stderr, text=True
        )


def event_kinds(events: Path) -> list[str]:
    """The kinds of the complete event lines written to `events` so far."""
    text = events.read_text() if events.exists() else ""
    lines = [line for line in text.splitlines(keepends=True) if line.endswith("\n")]
    return [json.loads(line)["event"] for line in lines]


def train_sampled(
    project: Path, env: dict[str, str], tmp_path: Path, events: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """`train ARGS` to its end, its job (set up with `hold_at`) released only once a `system`
    sample is in `events`: a loaded machine cannot end the job before its first sample."""
    err = tmp_path / "train.err"
    train = start(project, env, err, "--events", str(events), "train", *args)
    try:
        wait_for(lambda: "system" in event_kinds(events))
        release(tmp_path)
        out, _ = train.communicate(timeout=90)
    finally:
        train.kill()
        train.wait()
    return subprocess.CompletedProcess(train.args, train.returncode, out, err.read_text())


def wait_for(check: Callable[[], bool], timeout: float = 60.0) -> None:
    """Poll `check` until true; fail after `timeout` s (a bound for a loaded machine)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def run_ids(project: Path) -> list[str]:
    """The run directories, sorted."""
    runs = project / "runs"
    if not runs.is_dir():
        return []
    return sorted(p.name for p in runs.iterdir() if (p / "run.json").is_file())


def record(project: Path, run_id: str) -> dict[str, Any]:
    """A run's `run.json`."""
    value = json.loads((project / "runs" / run_id / "run.json").read_text())
    assert isinstance(value, dict)
    return value


def steps_logged(project: Path, run_id: str) -> int:
    """The highest step in the run's metrics file so far."""
    path = project / "runs" / run_id / "metrics.jsonl"
    if not path.exists():
        return 0
    steps = [json.loads(line).get("step", 0) for line in path.read_text().splitlines() if line]
    return max(steps, default=0)


def wait_for_steps(project: Path, steps: int) -> None:
    """Wait until the only run's job has logged `steps` steps."""

    def logged() -> bool:
        ids = run_ids(project)
        return len(ids) == 1 and steps_logged(project, ids[0]) >= steps

    wait_for(logged)


def group_alive(pid: int) -> bool:
    """Whether process group `pid` still has a live (not zombie) member."""
    return local_job.group_alive(pid)


def kill_jobs(root: Path) -> None:
    """Leave no job behind after a test: kill every group a `job.pid` under `root` names."""
    for pid_file in root.rglob("job.pid"):
        with contextlib.suppress(ValueError, ProcessLookupError, PermissionError):
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)


def only_run(project: Path) -> str:
    """The ID of the only run; fails when there is not exactly one."""
    ids = run_ids(project)
    assert len(ids) == 1, ids
    return ids[0]


@contextlib.contextmanager
def training(
    project: Path, env: dict[str, str], err: Path, steps: int = 2
) -> collections.abc.Iterator[subprocess.Popen[str]]:
    """`train` started in the background once its job has logged `steps` steps; killed after."""
    train = start(project, env, err, "train")
    try:
        wait_for_steps(project, steps)
        yield train
    finally:
        train.kill()
        train.wait()


def start_and_detach(project: Path, env: dict[str, str], err: Path) -> str:
    """Start `train`, wait until the job logs a few steps, Ctrl-C it; the run ID."""
    with training(project, env, err) as train:
        train.send_signal(signal.SIGINT)
        out, _ = train.communicate(timeout=10)
    run_id = only_run(project)
    assert train.returncode == 130
    assert out == ""
    assert err.read_text().splitlines()[-1] == (
        f"interrupted: run {run_id} keeps running on target `local`; "
        f"follow it again with `overbrainer train attach {run_id}`"
    )
    return run_id


@pytest.fixture(name="project")
def project_fixture(tmp_path: Path) -> collections.abc.Iterator[Path]:
    """A project with training data under tmp_path/p; its jobs killed at the end."""
    root = make_project(tmp_path / "p")
    yield root
    kill_jobs(root)


@pytest.fixture(name="bin_dir")
def bin_dir_fixture(tmp_path: Path) -> Path:
    """Where `standin_env` puts the stand-in `axolotl` (and `nvidia-smi`)."""
    return tmp_path / "bin"
