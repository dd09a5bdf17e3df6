"""A Runpod `train` whose create calls are refused with HTTP 400 in words other than "no
capacity": the next GPU type is tried (Runpod's description: capacity has no machine-readable
code, "Try your next candidate"), and when every type is refused each one's reason is told."""

from __future__ import annotations

from tests import runpod_train_support as pods
from tests.runpod_fake import Fault
from tests.runpod_train_support import A40, RTX, Setup, creates, pod_lines, pod_record, train
from tests.train_helpers import only_run, record

pytestmark = pods.needs_pod_tools
setup = pods.setup  # the fixture: a project on a Runpod target, the fake, its pod host

OTHER_WORDING = "Could not find any machines matching the requested GPU in these data centers."
RULE = "Requested cloud type is not offered for this GPU."


async def test_a_400_in_other_words_tries_the_next_gpu_type(setup: Setup) -> None:
    setup.fake.fail(Fault("POST", "pods", status=400, detail=OTHER_WORDING))
    done = await train(setup)
    err = done.stderr.decode()
    assert done.returncode == 0, err
    run_id = only_run(setup.project)
    assert creates(setup.fake) == [A40, RTX]
    assert pod_lines(err)[:3] == [
        f"pod: creating overbrainer-{run_id}-1 ({A40})",
        f"pod: {A40} unavailable (Runpod refused it with HTTP 400: {OTHER_WORDING})",
        f"pod: creating overbrainer-{run_id}-2 ({RTX})",
    ]
    pod = pod_record(setup.project, run_id)
    assert [a["result"] for a in pod["attempts"]] == ["unavailable", "created"]
    assert pod["gpu_type"] == RTX
    assert "invalid request" not in err


async def test_every_type_refused_tells_each_reason(setup: Setup) -> None:
    setup.fake.fail(Fault("POST", "pods", status=400, detail=OTHER_WORDING))
    setup.fake.fail(Fault("POST", "pods", status=400, detail=RULE))
    done = await train(setup)
    err = done.stderr.decode()
    run_id = only_run(setup.project)
    assert done.returncode == 1, err
    message = (
        f"no gpu_types entry could be placed: {A40}: Runpod refused it with HTTP 400: "
        f"{OTHER_WORDING}; {RTX}: Runpod refused it with HTTP 400: {RULE}; every type was "
        "refused with HTTP 400, which may mean Runpod does not accept the request itself "
        "(please report it with the reasons above)"
    )
    assert err.splitlines()[-1] == f"error: run {run_id} failed: {message}"
    assert creates(setup.fake) == [A40, RTX]
    saved = record(setup.project, run_id)
    assert (saved["state"], saved["message"]) == ("failed", message)
    attempts = pod_record(setup.project, run_id)["attempts"]
    assert [a["result"] for a in attempts] == ["unavailable", "unavailable"]
    assert setup.fake.pods == {}


async def test_a_422_still_aborts_as_an_invalid_request(setup: Setup) -> None:
    setup.fake.fail(Fault("POST", "pods", status=422, detail="body does not match"))
    done = await train(setup)
    err = done.stderr.decode()
    run_id = only_run(setup.project)
    assert done.returncode == 1, err
    assert err.splitlines()[-1] == (
        f"error: run {run_id} failed: Runpod rejected the create request "
        "(please report it: overbrainer built an invalid request)"
    )
    assert creates(setup.fake) == [A40]
