"""A Runpod run whose `pod.json` is gone while its pod may still bill: `runs ls` says so and
points at `overbrainer pod ls`, and `train stop` finds the pod by the run's name on Runpod (or
says it cannot tell), never "nothing to stop" unless Runpod has no pod of the run."""

from __future__ import annotations

from tests import runpod_train_support as pods
from tests.runpod_fake import Fault
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
from tests.train_helpers import only_run, record

pytestmark = pods.needs_pod_tools
setup = pods.setup  # the fixture: a project on a Runpod target, the fake, its pod host


async def run_without_pod_record(setup: Setup) -> str:
    """A run detached by Ctrl-C once its job logged two steps on the pod, then its `pod.json`
    deleted."""
    held_job(setup)
    code, err = await interrupt_when(setup, lambda: remote_steps(setup.pods_root) >= 2)
    assert code == 130, err
    run_id = only_run(setup.project)
    assert pod_record(setup.project, run_id)["state"] == "running"
    (setup.project / "runs" / run_id / "pod.json").unlink()
    return run_id


async def test_runs_ls_then_train_stop_find_the_pod_by_its_name(setup: Setup) -> None:
    run_id = await run_without_pod_record(setup)
    listed = await overbrainer_on(setup, "runs", "ls")
    assert listed.returncode == 0, listed.stderr.decode()
    line = listed.stdout.decode().splitlines()[0]
    assert line.startswith(f"{run_id}  unknown (pod record missing)  ")
    assert line.endswith(
        f"  check its pod with `overbrainer pod ls` (`overbrainer pod rm {run_id}`)"
    )

    done = await train(setup, "stop", run_id)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    assert f"runs/{run_id}/pod.json was missing: found pod pod0001 of the run on Runpod" in err
    assert out.splitlines()[1].startswith(f"train: run {run_id} stopped at step ")
    assert record(setup.project, run_id)["state"] == "stopped"
    assert "pod: deleting pod0001 (results retrieved)" in pod_lines(err)
    pod = pod_record(setup.project, run_id)
    assert (pod["state"], pod["pod_id"], pod["deleted_by"]) == ("deleted", "pod0001", "client")
    assert setup.fake.pods == {}


async def test_train_stop_says_nothing_to_stop_only_when_runpod_has_no_pod(
    setup: Setup,
) -> None:
    run_id = await run_without_pod_record(setup)
    setup.fake.fail(Fault("GET", "pods", status=403, detail="denied", exact=True))
    unknown = await train(setup, "stop", run_id)
    assert unknown.returncode == 1, unknown.stderr.decode()
    assert unknown.stderr.decode().splitlines()[-1] == (
        f"error: run {run_id} has no pod record (runs/{run_id}/pod.json is missing) and Runpod "
        "could not be asked for its pod (Runpod answered GET pods with HTTP 403: denied): check "
        "for a pod still billing with `overbrainer pod ls` and delete it with "
        f"`overbrainer pod rm {run_id}`"
    )
    assert list(setup.fake.pods) == ["pod0001"]

    setup.fake.pods.clear()  # the pod is gone from Runpod (deleted from its console)
    gone = await train(setup, "stop", run_id)
    assert gone.returncode == 2, gone.stderr.decode()
    assert gone.stderr.decode().splitlines()[-1] == (
        f"error: run {run_id} has no pod left (Runpod has no pod of it): nothing to stop"
    )


async def test_train_cancel_finds_the_pod_by_its_name(setup: Setup) -> None:
    run_id = await run_without_pod_record(setup)
    done = await train(setup, "cancel", run_id)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    assert out.splitlines() == [f"train: run {run_id} cancelled"]
    assert record(setup.project, run_id)["state"] == "cancelled"
    assert "pod: deleting pod0001 (results retrieved)" in pod_lines(err)
    assert pod_record(setup.project, run_id)["state"] == "deleted"
    assert setup.fake.pods == {}
