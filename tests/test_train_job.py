"""The detached job (§4.2-§4.4): composed command lines, the wrapper, status, cancel, outcomes."""

from __future__ import annotations

import collections.abc
import logging
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
import trio
import trio.lowlevel
import trio.testing

from overbrainer.config import load_settings
from overbrainer.config.settings import Adapter, Engine, Runtime, Training
from overbrainer.events.bus import open_event_bus
from overbrainer.events.interrupt import Interrupt
from overbrainer.flows.train import train_after_split, train_run
from overbrainer.model.job_status import Cancelled, Exited, Lost, Running
from overbrainer.project.directory import Project
from overbrainer.targets import LocalTarget
from overbrainer.targets import local as local_job
from overbrainer.targets.host_machine import HostMachine, host_runtime
from overbrainer.targets.job_script import Command
from overbrainer.targets.local import LocalJob, cancel, group_alive, job_status, start_job
from overbrainer.targets.local_executor import LocalExecutor
from overbrainer.targets.machine import JobPlan, JobSpec
from overbrainer.training.follow_job import FollowTimes
from overbrainer.training.outcome import InvalidProof, conclude, ended_state, read_proof
from overbrainer.training.prepare import job_commands, job_env
from overbrainer.training.run_store import RunRecord, Runs, RunState, Snapshot
from overbrainer.training.session import Detached, Session
from overbrainer.training.summary import MetricsSummary
from tests.train_helpers import Lines, kill_jobs, make_project, standin_env, wait_for

MERGING = Training(target="local", base_model="m", adapter=Adapter.LORA, merge=True)
STAGE = r"""{ printf '{"event":"stage","name":"%s","time":%s}\n' """
NATIVE = (
    r"""export AXOLOTL_DO_NOT_TRACK='1' && export PYTHONPATH='/r/run1/plugin'"""
    r""""${PYTHONPATH:+:$PYTHONPATH}" && export OVERBRAINER_METRICS='/r/run1/metrics.jsonl' """
    r"""&& export OVERBRAINER_SNAPSHOT='/r/run1/snapshot.request' && """
    r"""export PATH='/v/bin'"${PATH:+:$PATH}" && """
    + STAGE
    + r"""train "$(date +%s)" >> 'metrics.jsonl' || :; } && '/v/bin/axolotl' 'preprocess' """
    r"""'axolotl.yaml' && """
    + STAGE
    + r"""train "$(date +%s)" >> 'metrics.jsonl' || :; } && '/v/bin/axolotl' 'train' """
    r"""'axolotl.yaml' && { [ -f 'snapshot.json' ] || { """
    + STAGE
    + r"""merge "$(date +%s)" >> 'metrics.jsonl' || :; } && '/v/bin/axolotl' 'merge-lora' """
    r"""'axolotl.yaml'; }; }"""
)
Q = "'\\''"
CHAIN_STAGE = (
    f"""{{ printf {Q}{{"event":"stage","name":"%s","time":%s}}\\n{Q} train "$(date +%s)" >> """
    f"""{Q}metrics.jsonl{Q} || :; }} && """
)
CHAIN = (
    f"""{CHAIN_STAGE}{Q}axolotl{Q} {Q}preprocess{Q} {Q}axolotl.yaml{Q} && """
    f"""{CHAIN_STAGE}{Q}axolotl{Q} {Q}train{Q} {Q}axolotl.yaml{Q}"""
)
FORWARDING = (
    f"""trap {Q}trap "" TERM INT; kill -TERM 0 2>/dev/null; wait; exit 143{Q} TERM INT; """
    f"""( trap {Q}exit 143{Q} TERM; """
)
DOCKER = (
    "mkdir -p -- '/r/.hf-cache' && docker run --rm --name 'overbrainer-run1' --init --gpus all "
    '--user "$(id -u):$(id -g)" -e HOME=/tmp '
    "--ulimit memlock=-1 --ulimit stack=67108864 --ipc=host -v '/r/run1:/workspace/run' "
    "-v '/r/.hf-cache:/workspace/hf-cache' -w /workspace/run -e HF_HOME=/workspace/hf-cache "
    "-e 'AXOLOTL_DO_NOT_TRACK=1' -e 'PYTHONPATH=/workspace/run/plugin' "
    "-e 'OVERBRAINER_METRICS=/workspace/run/metrics.jsonl' "
    "-e 'OVERBRAINER_SNAPSHOT=/workspace/run/snapshot.request' -e 'HF_TOKEN' 'img:1' "
    f"sh -c '{FORWARDING}{CHAIN}\n) & wait $!'"
)


def plan_job(
    target: LocalTarget,
    *,
    run_id: str,
    run_dir: str,
    cache: str,
    commands: Sequence[Command],
    secrets: Sequence[str] = (),
) -> JobPlan:
    """A training job's commands as a local target's machine plans them."""
    machine = HostMachine(LocalExecutor(Path(run_dir).parent), host_runtime(target))
    env = job_env(machine.job_root(run_dir))
    return machine.plan(JobSpec(run_id, run_dir, cache, commands, env, secrets))


def test_native_commands_use_the_venv_and_keep_the_inherited_pythonpath() -> None:
    target = LocalTarget(runtime=Runtime.NATIVE, venv="/v")
    plan = plan_job(
        target, run_id="run1", run_dir="/r/run1", cache="/r/.c", commands=job_commands(MERGING)
    )
    assert plan.commands == NATIVE
    assert plan.container is None


def test_docker_and_podman_run_lines() -> None:
    training = Training(target="local", base_model="m", adapter=Adapter.FULL, merge=True)
    docker = LocalTarget(runtime=Runtime.DOCKER, image="img:1", gpus="all")
    plan = plan_job(
        docker,
        run_id="run1",
        run_dir="/r/run1",
        cache="/r/.hf-cache",
        commands=job_commands(training),  # a full fine-tune has nothing to merge
        secrets=["HF_TOKEN"],
    )
    assert plan.commands == DOCKER
    assert plan.container is not None and plan.container[1] == "overbrainer-run1"
    podman = LocalTarget(runtime=Runtime.DOCKER, engine=Engine.PODMAN, image="img:1")
    text = plan_job(
        podman, run_id="run1", run_dir="/r/run1", cache="/r/c", commands=job_commands(training)
    ).commands
    assert text.startswith(
        "mkdir -p -- '/r/c' && podman run --rm --name 'overbrainer-run1' --init "
        "$(nvidia-smi -L 2>/dev/null | grep -q '^GPU' && echo '--device nvidia.com/gpu=all') "
        '$([ "$(id -u)" = 0 ] || echo --userns=keep-id) -e HOME=/tmp '
        "--security-opt=label=disable --ulimit host --ipc=host "
        "-v '/r/run1:/workspace/run:Z' -v '/r/c:/workspace/hf-cache:z' -w /workspace/run "
    )
    assert " -e 'HF_TOKEN' " not in text


FAKE_AXOLOTL = """#!/bin/sh
echo "$1" >> calls
[ "$1" = preprocess ] && exit "${PREPROCESS_EXIT:-0}"
[ "$1" = train ] && [ -n "$SNAPSHOT" ] && echo '{}' > snapshot.json
exit 0
"""


@pytest.mark.parametrize(
    ("env", "calls", "code"),
    [
        ({}, ["preprocess", "train", "merge-lora"], 0),
        ({"SNAPSHOT": "1"}, ["preprocess", "train"], 0),  # stopped: no merge after a snapshot
        ({"PREPROCESS_EXIT": "3"}, ["preprocess"], 3),  # a failed preprocess trains nothing
    ],
)
def test_the_chain_preprocesses_trains_then_merges_unless_a_snapshot_was_saved(
    tmp_path: Path, env: dict[str, str], calls: list[str], code: int
) -> None:
    from overbrainer.targets.job_script import chain

    program = tmp_path / "venv" / "bin" / "axolotl"
    program.parent.mkdir(parents=True)
    program.write_text(FAKE_AXOLOTL)
    program.chmod(0o755)
    text = chain(job_commands(MERGING), str(tmp_path / "venv"))
    done = subprocess.run(["sh", "-c", text], cwd=tmp_path, env={**os.environ, **env}, check=False)
    assert done.returncode == code
    assert (tmp_path / "calls").read_text().split() == calls
    stages = (tmp_path / "metrics.jsonl").read_text().count('"name":"train"')
    assert stages == min(len(calls), 2)  # a stage line before each command of the train stage


@pytest.fixture(autouse=True)
def no_job_left(tmp_path: Path) -> collections.abc.Iterator[None]:
    """Kill the jobs a test started under `tmp_path`, even when it fails midway."""
    yield
    kill_jobs(tmp_path)


async def wait_exit(job: LocalJob) -> None:
    with trio.fail_after(10):
        while isinstance(job_status(job), Running):  # noqa: ASYNC110 - a process has no event
            await trio.sleep(0.02)


async def test_the_wrapper_records_pid_and_exit_code_with_a_clean_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OVERBRAINER_PROVIDERS__X__API_KEY", "k")
    monkeypatch.setenv("VAULT_TOKEN", "v")
    (tmp_path / "exit_code").write_text("9\n")  # stale, from an earlier start
    commands = (
        "echo out; echo err >&2; env > env.txt; cat > stdin.txt; ps -o pgid= -p $$ > g; exit 4"
    )
    job = await start_job(tmp_path, commands, {"HF_TOKEN": "hf_secret"})
    await wait_exit(job)
    assert job_status(job) == Exited(4)
    assert (tmp_path / "job.pid").read_text().strip() == str(job.pid)
    assert (tmp_path / "exit_code").read_text().strip() == "4"
    assert (tmp_path / "job.log").read_text() == "out\nerr\n"
    env = (tmp_path / "env.txt").read_text()
    assert "HF_TOKEN=hf_secret" in env
    assert "OVERBRAINER_" not in env and "VAULT_" not in env
    assert (tmp_path / "stdin.txt").read_text() == ""
    assert (tmp_path / "g").read_text().strip() == str(job.pid)  # its own process group


async def test_cancel_kills_a_group_that_ignores_term(tmp_path: Path) -> None:
    job = await start_job(tmp_path, "trap '' TERM; : > ready; sleep 60")
    with trio.fail_after(10):
        while not (tmp_path / "ready").exists():  # noqa: ASYNC110 - a file has no event
            await trio.sleep(0.01)
        before = trio.current_time()
        await cancel(job, grace=1.0)  # 10 s in production
    assert trio.current_time() - before >= 1.0  # TERM was ignored: KILL came after the grace
    assert job_status(job) == Cancelled()
    assert (tmp_path / "cancelling").exists() and (tmp_path / "cancelled").exists()
    assert not group_alive(job.pid)


# The cancel checks the group in a thread (a /proc scan, ~5 ms): the clock must not jump to the
# grace's end while one runs, only once every task has waited this long in real time.
THREAD_HOP = 0.05


async def test_the_production_cancel_kills_10_s_after_term(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    job = await start_job(tmp_path, "trap '' TERM; : > ready; sleep 60")
    # Wait in real time: on the autojump clock a trio.sleep loop would not let the shell start.
    await trio.to_thread.run_sync(lambda: wait_for(lambda: (tmp_path / "ready").exists()))
    autojump_clock.autojump_threshold = THREAD_HOP
    before = trio.current_time()
    await local_job.LocalRunJob(job).cancel()
    waited = trio.current_time() - before
    assert 10.0 <= waited < 10.0 + 2 * local_job.REAP_EVERY_S + 1.0  # TERM, 10 s, KILL
    assert job_status(job) == Cancelled()
    assert not group_alive(job.pid)


async def test_a_group_that_honours_term_is_not_kept_waiting(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    job = await start_job(tmp_path, ": > ready; sleep 60")
    await trio.to_thread.run_sync(lambda: wait_for(lambda: (tmp_path / "ready").exists()))
    autojump_clock.autojump_threshold = THREAD_HOP
    before = trio.current_time()
    await local_job.LocalRunJob(job).cancel()
    assert trio.current_time() - before < 10.0  # gone after TERM: no KILL, no full grace
    assert job_status(job) == Cancelled()


async def test_a_group_killed_without_an_exit_code_is_lost(tmp_path: Path) -> None:
    job = await start_job(tmp_path, "sleep 60")
    assert job_status(job) == Running()
    os.killpg(job.pid, signal.SIGKILL)
    await wait_exit(job)
    assert job_status(job) == Lost()


async def test_ctrl_c_during_the_start_still_records_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(tmp_path / "p")
    env = standin_env(tmp_path / "bin", STANDIN_PACE="0.05", STANDIN_STEPS="100")
    monkeypatch.setenv("PATH", env["PATH"])
    settings = load_settings(root, environ={})
    interrupt = Interrupt()
    real_start = local_job.start_job

    async def start_then_ctrl_c(*args: object) -> LocalJob:
        interrupt.fire()  # the user presses Ctrl-C while the job starts
        await trio.lowlevel.checkpoint()
        return await real_start(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(local_job, "start_job", start_then_ctrl_c)
    lines = Lines()
    with trio.fail_after(10):
        async with open_event_bus() as bus:
            session = Session(settings, Project(root), bus, interrupt, FollowTimes(poll=0.05))
            with pytest.raises(Detached) as caught:
                await train_run(session, lines)
    (run_id,) = Runs(root / "runs").ids()
    record = Runs(root / "runs").load(run_id)
    assert record.state is RunState.RUNNING
    assert (
        record.job is not None and record.job.pid is not None and group_alive(record.job.pid)
    )  # started and alive
    assert caught.value.message == (
        f"interrupted: run {run_id} keeps running on target `local`; "
        f"follow it again with `overbrainer train attach {run_id}`"
    )
    assert caught.value.exit_code == 130
    assert lines.lines == []


def record_of(state: RunState) -> RunRecord:
    return RunRecord(
        id="r1",
        target="local",
        created="2026-01-01T00:00:00Z",
        remote_dir="/x",
        job=None,
        state=state,
    )


def test_ended_states_and_their_messages() -> None:
    lines = MetricsSummary(lines=3)
    empty = MetricsSummary()
    assert ended_state(Exited(0), lines, "r1") == (RunState.SUCCEEDED, None)
    assert ended_state(Exited(0), empty, "r1") == (
        RunState.FAILED,
        "the job wrote no metrics: the overbrainer metrics plugin was not loaded "
        "(see runs/r1/job.log)",
    )
    assert ended_state(Exited(2), lines, "r1") == (
        RunState.FAILED,
        "the job exited with code 2 (see runs/r1/job.log)",
    )
    assert ended_state(Cancelled(), lines, "r1") == (RunState.CANCELLED, None)
    assert ended_state(Lost(), lines, "r1") == (
        RunState.FAILED,
        "the job stopped without an exit code (see runs/r1/job.log)",
    )


def test_snapshot_proofs(tmp_path: Path) -> None:
    assert read_proof(tmp_path) is None
    proof = tmp_path / "snapshot.json"
    proof.write_text('{"checkpoint":"output/checkpoint-7","step":7,"time":1,"reason":"disk"}')
    assert read_proof(tmp_path) == Snapshot("output/checkpoint-7", 7, "disk")
    proof.write_text('{"checkpoint":"output/checkpoint-7",\n "step":}')
    with pytest.raises(InvalidProof, match=r"^snapshot.json is not valid \(line 2, column 9\)$"):
        read_proof(tmp_path)
    proof.write_text('{"checkpoint":"../checkpoint-7","step":7,"reason":"requested"}')
    with pytest.raises(InvalidProof, match="^snapshot.json names an invalid checkpoint path$"):
        read_proof(tmp_path)


def test_conclude_turns_a_proof_into_stopped_and_requires_output(tmp_path: Path) -> None:
    summary = MetricsSummary(lines=4)
    no_output = conclude(record_of(RunState.RUNNING), Exited(0), summary, tmp_path)
    assert no_output.state is RunState.FAILED
    assert no_output.message == "the job succeeded but left no output (see runs/r1/job.log)"
    (tmp_path / "output" / "checkpoint-3").mkdir(parents=True)
    (tmp_path / "snapshot.json").write_text(
        '{"checkpoint":"output/checkpoint-3","step":3,"reason":"requested"}'
    )
    empty_checkpoint = conclude(record_of(RunState.RUNNING), Cancelled(), summary, tmp_path)
    assert empty_checkpoint.message == (
        "the job stopped with a snapshot but left no file in output/checkpoint-3 "
        "(see runs/r1/job.log)"
    )
    (tmp_path / "output" / "checkpoint-3" / "w").write_text("x")
    stopped = conclude(record_of(RunState.RUNNING), Cancelled(), summary, tmp_path)
    assert stopped.state is RunState.STOPPED and stopped.message is None
    assert stopped.snapshot == Snapshot("output/checkpoint-3", 3, "requested")
    (tmp_path / "snapshot.json").write_text("{")
    broken = conclude(record_of(RunState.RUNNING), Exited(0), summary, tmp_path)
    assert broken.state is RunState.FAILED
    assert broken.message == (
        "the job stopped with a snapshot, but snapshot.json is not valid (line 1, column 2)"
    )
    still_cancelled = conclude(record_of(RunState.RUNNING), Cancelled(), summary, tmp_path)
    assert still_cancelled.state is RunState.CANCELLED


async def test_run_stops_after_split_without_training(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = make_project(tmp_path / "p")
    config = root / "overbrainer.toml"
    text = config.read_text()
    start, end = text.index("[training]"), text.index("[targets.local]")
    config.write_text(text[:start] + text[end:])
    settings = load_settings(root, environ={})
    lines = Lines()
    with caplog.at_level(logging.INFO), trio.fail_after(10):
        async with open_event_bus() as bus:
            session = Session(settings, Project(root), bus, Interrupt())
            result = await train_after_split(session, lines)
    assert result is None
    assert lines.lines == []
    assert caplog.records[-1].getMessage() == (
        "no [training] section in overbrainer.toml: run stops after split"
    )
    assert not (root / "runs").exists()


def test_an_ended_runs_summary_reads_the_whole_file(tmp_path: Path) -> None:
    from overbrainer.training.outcome import local_summary

    (tmp_path / "metrics.jsonl").write_text(
        '{"event":"begin","time":1.0,"max_steps":2}\n\n\n'
        '{"event":"log","time":2.0,"step":2,"max_steps":2,"loss":0.5}\n'
        "not json\n"
        '{"event":"log","time":3.0,"step":2,"eval_loss":0.25}'  # no terminator: still being written
    )
    summary = local_summary(tmp_path)
    assert (summary.lines, summary.malformed, summary.step) == (2, 1, 2)
    assert summary.describe() == "step 2/2, loss 0.5000"
    assert local_summary(tmp_path / "missing").describe() == "step 0"
