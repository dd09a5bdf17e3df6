"""A Runpod `train` whose look for stray pods fails (a 503 while listing the account's pods)
goes on with a warning: the error comes out of `Interrupt.race` as itself, so the `except`
around the stray check fires instead of the whole `train` failing."""

from __future__ import annotations

from tests import runpod_train_support as on_pods
from tests.runpod_fake import Fault, RunpodFake
from tests.runpod_train_support import Setup, messages, train
from tests.train_helpers import only_run, record

setup = on_pods.setup  # the fixture: a project on a Runpod target, the fake, its pod host
needs_pods = on_pods.needs_pod_tools

LISTING = "cannot list the account's pods to look for strays: "


def _busy_listing(fake: RunpodFake) -> None:
    """Every attempt of the pod listing (the first and its five retries) is answered 503."""
    fake.fail(
        *(
            Fault("GET", "pods", status=503, retry_after="0", detail="busy", exact=True)
            for _ in range(6)
        )
    )


def _warning(err: str) -> str:
    found = [line for line in messages(err) if line.startswith(LISTING)]
    assert len(found) == 1, err
    return found[0]


@needs_pods
async def test_a_503_while_listing_pods_is_a_warning_and_the_run_succeeds(setup: Setup) -> None:
    _busy_listing(setup.fake)
    done = await train(setup)
    err = done.stderr.decode()
    assert done.returncode == 0, err
    assert "503" in _warning(err)
    assert record(setup.project, only_run(setup.project))["state"] == "succeeded"


async def test_a_503_while_listing_pods_goes_on_to_the_pod_create(setup: Setup) -> None:
    # Needs no sshd: the create is refused (no credits), so no pod boots.
    _busy_listing(setup.fake)
    setup.fake.fail(Fault("POST", "pods", status=402, detail="insufficient balance"))
    done = await train(setup)
    err = done.stderr.decode()
    run_id = only_run(setup.project)
    assert done.returncode == 1, err
    assert "503" in _warning(err)
    assert len(setup.fake.asked("GET", "pods")) == 6
    # The run failed for the create's reason, not the listing's.
    assert err.splitlines()[-1] == (
        f"error: run {run_id} failed: the Runpod account balance is insufficient"
    )
    assert setup.fake.faults == []
