"""`overbrainer runs logs --pod` of a Runpod run: the pod's kept lines, then Runpod's stream,
and the last lines kept once the pod is gone."""

from __future__ import annotations

import json

from tests import runpod_train_support as pods
from tests.runpod_train_support import (
    Setup,
    held_job,
    interrupt_when,
    overbrainer_on,
    remote_steps,
    train,
)
from tests.train_helpers import only_run

pytestmark = pods.needs_pod_tools
setup = pods.setup  # the fixture: a project on a Runpod target, the fake, its pod host


def kept_host_key(setup: Setup) -> bool:
    """Whether the only run has kept the pod's host-key line of Runpod's log in `.pod/pod.log`."""
    kept = list((setup.project / "runs").glob("*/.pod/pod.log"))
    return len(kept) == 1 and " container overbrainer-host-key " in kept[0].read_text()


async def test_runs_logs_pod_prints_kept_lines_then_runpods_stream(setup: Setup) -> None:
    held_job(setup)
    # Detached once the log capture (which runs beside the job) has kept the pod's first lines.
    code, err = await interrupt_when(
        setup, lambda: remote_steps(setup.pods_root) >= 2 and kept_host_key(setup)
    )
    assert code == 130, err
    run_id = only_run(setup.project)
    kept = (setup.project / "runs" / run_id / ".pod" / "pod.log").read_text().splitlines()
    bodies = [line.split(" ", 1)[1] for line in kept]
    assert bodies[:2] == [
        "system create pod pod0001: pulling "
        + json.loads(setup.fake.asked("POST", "pods")[0].body)["image"],
        "container starting the container",
    ]
    # Then the pod's own output (its container log), the host-key line among it.
    assert any(body.startswith("container overbrainer-host-key ssh-ed25519 ") for body in bodies)
    # Runpod has more lines since: `--pod` prints the kept ones, then the new ones (the
    # pod's own output printed since comes around them, in Runpod's order).
    setup.fake.log("pod0001", "container", "step 3 done \x1b[31mred\x1b[0m")
    setup.fake.log("pod0001", "system", "GPU 0 at 71 C")
    done = await overbrainer_on(setup, "runs", "logs", run_id, "--pod")
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()
    lines = out.splitlines()
    pod_part = [line.split(" ", 1)[1] for line in lines[lines.index("== pod ==") + 1 :]]
    assert pod_part[: len(kept)] == bodies
    newer = pod_part[len(kept) :]
    added = ["container step 3 done red", "system GPU 0 at 71 C"]
    assert [line for line in newer if line in added] == added
    # The command is read-only: the kept cursor did not move.
    assert (setup.project / "runs" / run_id / ".pod" / "pod.log").read_text().splitlines() == kept
    # `--source system`: no script logs, only Runpod's system lines.
    done = await overbrainer_on(setup, "runs", "logs", run_id, "--pod", "--source", "system")
    lines = done.stdout.decode().splitlines()
    assert lines[0] == "== pod =="
    assert [line.split(" ", 1)[1] for line in lines[1:]] == [
        bodies[0],
        "system GPU 0 at 71 C",
    ]
    logs_asked = [r for r in setup.fake.requests if r.path == "/v2/pods/pod0001/logs"]
    assert logs_asked[-1].headers.get("last-event-id") == kept_cursor(setup, run_id)
    # Once the pod is gone, Runpod has no more lines to give.
    cancel = await train(setup, "cancel", run_id)
    assert cancel.returncode == 0, cancel.stderr.decode()
    assert "pod: cannot keep" not in cancel.stderr.decode()
    done = await overbrainer_on(setup, "runs", "logs", run_id, "--pod")
    lines = done.stdout.decode().splitlines()
    assert "== .pod/watchdog.log ==" in lines, cancel.stderr.decode()
    # The pod's end kept its last lines (the pod's own output may follow Runpod's).
    assert any(line.endswith(" system GPU 0 at 71 C") for line in lines)
    assert setup.fake.pods == {}


def kept_cursor(setup: Setup, run_id: str) -> str:
    return (setup.project / "runs" / run_id / ".pod" / "pod.log.cursor").read_text().strip()
