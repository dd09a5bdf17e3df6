"""`train stop` and `train cancel` of a detached run on a Runpod pod, and of one whose pod
is already deleted."""

from __future__ import annotations

from functools import partial

import trio

from tests import runpod_train_support as pods
from tests.runpod_train_support import (
    Setup,
    held_job,
    interrupt_when,
    overbrainer_on,
    pod_lines,
    pod_record,
    remote_steps,
    train,
)
from tests.train_helpers import command, only_run, record

pytestmark = pods.needs_pod_tools
setup = pods.setup  # the fixture: a project on a Runpod target, the fake, its pod host


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


async def test_train_stop_beside_the_following_train_writes_the_request_over_the_pods_ssh(
    setup: Setup,
) -> None:
    # `train` follows the run (it holds the project); `train stop` beside it reaches the pod
    # through the run's ssh config, and the follower collects the snapshot.
    held_job(setup)
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            following = await nursery.start(
                partial(
                    trio.run_process,
                    command(setup.project, "train"),
                    env=setup.env,
                    capture_stdout=True,
                    capture_stderr=True,
                    check=False,
                )
            )
            while remote_steps(setup.pods_root) < 2:  # noqa: ASYNC110 - the job's state
                await trio.sleep(0.02)
            run_id = only_run(setup.project)
            stop = await train(setup, "stop", run_id)
            assert stop.returncode == 0, stop.stderr.decode()
            (line,) = stop.stdout.decode().splitlines()
            assert line.startswith("train: overbrainer (pid ")
            assert line.endswith(
                f"is using this project: if it follows run {run_id}, it collects the snapshot; "
                f"if not, collect it with `overbrainer train attach {run_id}`"
            )
    assert following.returncode == 0
    assert record(setup.project, run_id)["state"] == "stopped"
    remote = setup.pods_root / "workspace" / "overbrainer" / run_id
    assert (remote / "snapshot.request").read_text() == "requested\n"
    assert setup.fake.pods == {}
