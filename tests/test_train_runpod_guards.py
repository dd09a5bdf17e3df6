"""What ends a Runpod job before it is done: the cost cap, `max_hours`, a full disk, and a
pod deleted elsewhere while `train` follows it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import trio

from tests import runpod_train_support as pods
from tests.runpod_train_support import (
    Setup,
    held_job,
    messages,
    pod_lines,
    pod_record,
    remote_steps,
    slow_job,
    train,
    train_acting_when,
)
from tests.train_helpers import only_run, record

pytestmark = pods.needs_pod_tools
setup = pods.setup  # the fixture: a project on a Runpod target, the fake, its pod host


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
    # The follower rides out an outage for reconnect_secs before it asks Runpod about the pod.
    setup.env["OVERBRAINER_TARGETS__GPU_CLOUD__RECONNECT_SECS"] = "2"

    def vanish(process: trio.Process) -> None:
        setup.fake.vanish("pod0001")
        for master in ssh_masters(process.pid):
            os.kill(master, signal.SIGTERM)

    returncode, err = await train_acting_when(
        setup, lambda: remote_steps(setup.pods_root) >= 2, vanish
    )
    run_id = only_run(setup.project)
    assert returncode == 1, err
    assert err.splitlines()[-1] == f"error: run {run_id} failed: pod pod0001 no longer exists"
    saved = record(setup.project, run_id)
    assert (saved["state"], saved["message"]) == ("failed", "pod pod0001 no longer exists")
    pod = pod_record(setup.project, run_id)
    assert (pod["state"], pod["deleted_by"]) == ("deleted", "unknown")
    assert not (setup.project / "runs" / run_id / "ssh" / "id_ed25519").exists()
