"""A Runpod `train` whose pod cannot be had as asked: no credits, pods that never become
ready, a create whose answer is lost (the pod is adopted by its name)."""

from __future__ import annotations

from tests import runpod_train_support as pods
from tests.runpod_fake import Fault
from tests.runpod_train_support import (
    A40,
    Setup,
    creates,
    pod_lines,
    pod_record,
    train,
)
from tests.train_helpers import only_run, record

pytestmark = pods.needs_pod_tools
setup = pods.setup  # the fixture: a project on a Runpod target, the fake, its pod host


async def test_no_credits_fails_the_run_before_any_pod(setup: Setup) -> None:
    setup.fake.fail(Fault("POST", "pods", status=402, detail="insufficient balance"))
    done = await train(setup)
    err = done.stderr.decode()
    run_id = only_run(setup.project)
    assert done.returncode == 1, err
    assert err.splitlines()[-1] == (
        f"error: run {run_id} failed: the Runpod account balance is insufficient"
    )
    assert creates(setup.fake) == [A40]
    saved = record(setup.project, run_id)
    assert (saved["state"], saved["message"]) == (
        "failed",
        "the Runpod account balance is insufficient",
    )
    results = [a["result"] for a in pod_record(setup.project, run_id)["attempts"]]
    assert results == ["refused"]
    assert setup.fake.pods == {}
    assert not (setup.project / "runs" / run_id / "ssh" / "id_ed25519").exists()


async def test_pods_that_never_become_ready_are_deleted(setup: Setup) -> None:
    assert setup.fake.host is not None
    setup.fake.host.boots = False
    setup.fake.create_status = "EXITED"
    done = await train(setup)
    err = done.stderr.decode()
    run_id = only_run(setup.project)
    assert done.returncode == 1, err
    assert err.splitlines()[-1] == (
        f"error: run {run_id} failed: no gpu_types entry gave a ready pod: 2 pods were created "
        "but never became ready, the last one because the pod is EXITED"
    )
    assert "pod: deleting pod0001 (not ready in time)" in pod_lines(err)
    assert "pod: deleting pod0002 (not ready in time)" in pod_lines(err)
    results = [a["result"] for a in pod_record(setup.project, run_id)["attempts"]]
    assert results == ["not_ready", "not_ready"]
    assert record(setup.project, run_id)["state"] == "failed"
    assert setup.fake.pods == {}


async def test_an_unanswered_create_is_reconciled_by_adoption(setup: Setup) -> None:
    # Runpod makes the pod but the answer is a 500: the pod is found by its name and adopted.
    setup.fake.fail(Fault("POST", "pods", status=500, create=True))
    done = await train(setup)
    err = done.stderr.decode()
    assert done.returncode == 0, err
    run_id = only_run(setup.project)
    assert creates(setup.fake) == [A40]
    pod = pod_record(setup.project, run_id)
    assert [(a["result"], a.get("pod_id")) for a in pod["attempts"]] == [("adopted", "pod0001")]
    assert (pod["pod_id"], pod["state"]) == ("pod0001", "deleted")
    assert setup.fake.pods == {}
