"""Ctrl-C on a Runpod `train` at each step: during provisioning its pod is deleted; while
it follows the job it detaches, and `train attach` follows the run to its end."""

from __future__ import annotations

import json

import pytest
import trio

from tests import runpod_train_support as pods
from tests.runpod_fake import Fault, RunpodFake
from tests.runpod_train_support import (
    Setup,
    interrupt_when,
    pod_lines,
    pod_record,
    remote_steps,
)
from tests.train_helpers import command, only_run, record

pytestmark = pods.needs_pod_tools
setup = pods.setup  # the fixture: a project on a Runpod target, the fake, its pod host


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "pods"), ("GET", "pods/pod0001/logs")],
    ids=["during-the-create", "during-the-host-key-read"],
)
async def test_ctrl_c_at_a_provisioning_step(setup: Setup, method: str, path: str) -> None:
    # The step's request is done but its answer held: Ctrl-C lands while it is in flight.
    answer = trio.Event()
    setup.fake.fail(Fault(method, path, held=answer, create=True))
    code, err = await interrupt_when(setup, lambda: bool(setup.fake.asked(method, path)), answer)
    run_id = only_run(setup.project)
    assert code == 130, err
    assert err.splitlines()[-1] == (
        f"interrupted: run {run_id} stopped before its job started; it has no pod left"
    )
    assert len(setup.fake.asked("POST", "pods")) == 1
    assert "pod: deleting pod0001 (interrupted before the job started)" in pod_lines(err)
    assert record(setup.project, run_id)["state"] == "failed"
    assert setup.fake.pods == {}


async def test_ctrl_c_while_the_pod_starts_deletes_it(setup: Setup) -> None:
    # The pod never boots, so the client is still waiting for SSH when Ctrl-C comes.
    assert setup.fake.host is not None
    setup.fake.host.boots = False
    code, err = await interrupt_when(setup, lambda: bool(setup.fake.pods))
    run_id = only_run(setup.project)
    assert code == 130, err
    assert err.splitlines()[-1] == (
        f"interrupted: run {run_id} stopped before its job started; it has no pod left"
    )
    assert "pod: deleting pod0001 (interrupted before the job started)" in err
    assert record(setup.project, run_id)["state"] == "failed"
    assert pod_record(setup.project, run_id)["state"] == "deleted"
    assert setup.fake.pods == {}


async def test_ctrl_c_while_following_detaches_and_attach_ends_the_pod(setup: Setup) -> None:
    script = setup.project.parent / "venv" / "bin" / "axolotl"
    script.write_text(script.read_text().replace("STANDIN_PACE=0.02", "STANDIN_PACE=0.25"))
    code, err = await interrupt_when(setup, lambda: remote_steps(setup.pods_root) >= 2)
    run_id = only_run(setup.project)
    assert code == 130, err
    assert err.splitlines()[-1].startswith(
        f"interrupted: run {run_id} keeps running on pod pod0001 ($0.44/h); follow it again "
        f"with `overbrainer train attach {run_id}`, or delete the pod with "
        f"`overbrainer pod rm {run_id}`. The watchdog deletes the pod 60 min after the job ends"
    )
    assert list(setup.fake.pods) == ["pod0001"]
    assert pod_record(setup.project, run_id)["state"] == "running"
    with trio.fail_after(90):
        attached = await trio.run_process(
            command(setup.project, "train", "attach", run_id),
            env=setup.env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert attached.returncode == 0, attached.stderr.decode()
    out = attached.stdout.decode()
    assert out.startswith(f"train: run {run_id} succeeded; step 20/20")
    assert "pod: deleting pod0001 (results retrieved)" in pod_lines(attached.stderr.decode())
    assert pod_record(setup.project, run_id)["state"] == "deleted"
    assert setup.fake.pods == {}


def watchdog_asked(fake: RunpodFake) -> bool:
    """Whether the pod's watchdog sent its probe (its own User-Agent)."""
    agents = (r.headers.get("user-agent", "") for r in fake.requests)
    return any(agent.startswith("overbrainer-watchdog/") for agent in agents)


async def test_ctrl_c_while_waiting_for_the_watchdogs_verdict(setup: Setup) -> None:
    # The pod boots and its sshd answers, but its watchdog's probe is never answered, so no
    # verdict is written: the client waits for one when Ctrl-C comes.
    setup.fake.fail(
        Fault("GET", "pods/pod0001", agent="overbrainer-watchdog", held=trio.Event(), create=True)
    )

    seen: list[float] = []

    def waiting() -> bool:
        """True 1.5 s after the watchdog probed and the client wrote the pod's ssh config."""
        configs = list((setup.project / "runs").glob("*/ssh/config"))
        if not (watchdog_asked(setup.fake) and configs):
            return False
        seen.append(trio.current_time())
        return seen[-1] - seen[0] > 1.5

    code, err = await interrupt_when(setup, waiting)
    run_id = only_run(setup.project)
    assert code == 130, err
    assert err.splitlines()[-1] == (
        f"interrupted: run {run_id} stopped before its job started; it has no pod left"
    )
    assert "pod: deleting pod0001 (interrupted before the job started)" in pod_lines(err)
    assert not any(line.startswith("pod: pod0001 ready") for line in pod_lines(err))
    remote = setup.pods_root / "workspace" / "overbrainer" / run_id
    assert not (remote / ".pod" / "watchdog").exists()
    saved = record(setup.project, run_id)
    assert (saved["state"], saved["message"], saved.get("job")) == (
        "failed",
        "interrupted before its job started",
        None,
    )
    assert pod_record(setup.project, run_id)["state"] == "deleted"
    assert setup.fake.pods == {}


async def test_ctrl_c_between_ready_and_the_job_start(setup: Setup) -> None:
    # The pod is ready; the look for other pods of the run (`GET /pods`) is held, so Ctrl-C
    # lands after the pod was ready and before the job starts.
    # (The first `GET /pods` is the stray listing at the start: answered at once.)
    answer = trio.Event()
    setup.fake.fail(
        Fault("GET", "pods", create=True, exact=True),
        Fault("GET", "pods", held=answer, create=True, exact=True),
    )

    def sweeping() -> bool:
        """The pod is ready and the slow look for other pods was asked (Ctrl-C cancels it)."""
        records = list((setup.project / "runs").glob("*/pod.json"))
        ready = bool(records) and json.loads(records[0].read_text()).get("state") == "ready"
        return ready and len(setup.fake.asked("GET", "pods")) == 2

    code, err = await interrupt_when(setup, sweeping, answer)
    run_id = only_run(setup.project)
    assert code == 130, err
    assert err.splitlines()[-1] == (
        f"interrupted: run {run_id} stopped before its job started; it has no pod left"
    )
    assert len(setup.fake.asked("GET", "pods")) == 2  # no sweep after the interruption
    lines = pod_lines(err)
    assert any(line.startswith("pod: pod0001 ready after ") for line in lines)
    assert "pod: deleting pod0001 (interrupted before the job started)" in lines
    saved = record(setup.project, run_id)
    assert (saved["state"], saved.get("job")) == ("failed", None)
    remote = setup.pods_root / "workspace" / "overbrainer" / run_id
    assert not (remote / "job.pid").exists()
    assert setup.fake.pods == {}
