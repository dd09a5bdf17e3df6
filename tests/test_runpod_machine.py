"""The runpod kind on the job seam (issue 42): `RunpodKind.open` makes a pod for a job
(its record created first, the pod named after it), the machine stages, starts, follows and
fetches a job, `reach` finds the pod again, `describe` says what `pod.json` says, and
`end` deletes the pod; all against the Runpod fake whose pods boot for real here."""

from __future__ import annotations

import pytest
import trio

from overbrainer.config.load import load_settings
from overbrainer.config.settings import Settings
from overbrainer.events.bus import open_event_bus
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError, UsageError
from overbrainer.model.job_status import Exited, Running
from overbrainer.model.train_metric import JobStage
from overbrainer.targets import (
    RUNPOD,
    Claim,
    Ended,
    Ending,
    JobNeeds,
    JobOpening,
    JobSpec,
    RecordedJob,
)
from overbrainer.targets.job_script import Command
from tests import runpod_train_support as pods
from tests.runpod_train_support import Setup, pod_record

pytestmark = pods.needs_pod_tools
setup = pods.setup  # the fixture: a project on a Runpod target, the fake, its pod host

JOB_ID = "job1"


def project_settings(setup: Setup, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The fake-Runpod project's settings, read with its environment set."""
    for name, value in setup.env.items():
        monkeypatch.setenv(name, value)
    return load_settings(setup.project)


def _refused() -> OverbrainerError:
    return UsageError("interrupted before the job started")


async def test_a_pod_is_made_for_a_job_reached_again_and_deleted_at_its_end(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = project_settings(setup, monkeypatch)
    target = settings.targets["gpu_cloud"]
    runs = setup.project / "runs"
    created: list[str] = []
    failed: list[str] = []

    async def create(workdir: str, claim: Claim | None) -> str:
        assert claim is None  # R is claimed on the pod, once it is up
        (runs / JOB_ID).mkdir(parents=True)
        created.append(f"{workdir}/{JOB_ID}")
        return JOB_ID

    async def fail(message: str) -> None:
        failed.append(message)

    local = setup.project / "job"
    local.mkdir()
    (local / "input.txt").write_text("hello\n")
    with trio.fail_after(60):
        async with open_event_bus() as bus:
            interrupt = Interrupt()
            opening = JobOpening(
                "gpu_cloud",
                target,
                JobNeeds(),
                create,
                runs,
                bus,
                interrupt,
                _refused,
                settings=settings,
                fail=fail,
            )
            async with RUNPOD.open(opening) as machine:
                (root,) = created
                assert not machine.here
                await machine.stage(local, root)
                plan = machine.plan(_spec(root))
                job = await machine.start(root, plan, {})
                followed = machine.followed(job)
                while await followed.status() == Running():  # noqa: ASYNC110 - the job's state
                    await trio.sleep(0.05)
                assert await followed.status() == Exited(0)
                assert RUNPOD.describe(runs / JOB_ID) == pod_summary(setup, JOB_ID)
                await machine.detach()
            recorded = RecordedJob(
                "gpu_cloud", target, job, runs / JOB_ID, bus, interrupt, _refused, settings=settings
            )
            async with RUNPOD.reach(recorded) as again:
                await again.fetch(job, runs / JOB_ID, ["output.txt"])
                assert await again.end(Ended(Ending.DONE, retrieved=True)) is None
    assert (runs / JOB_ID / "output.txt").read_text() == "hello\n"
    assert failed == []
    assert setup.fake.pods == {}
    assert pod_record(setup.project, JOB_ID)["state"] == "deleted"
    assert RUNPOD.describe(runs / "none") is None


def _spec(root: str) -> JobSpec:
    copy = Command(JobStage.TRAIN, "cp", ("input.txt", "output.txt"), from_venv=False)
    return JobSpec(JOB_ID, root, f"{root}/.cache", [copy], {})


def pod_summary(setup: Setup, job_id: str) -> str:
    from overbrainer.targets import load_pod_record

    loaded = load_pod_record(setup.project / "runs" / job_id)
    assert loaded is not None
    return loaded.summary()


async def test_ctrl_c_while_the_pod_starts_deletes_it_and_fails_the_record(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = project_settings(setup, monkeypatch)
    runs = setup.project / "runs"
    failed: list[str] = []

    async def create(workdir: str, claim: Claim | None) -> str:
        (runs / JOB_ID).mkdir(parents=True)
        return JOB_ID

    async def fail(message: str) -> None:
        failed.append(message)

    with trio.fail_after(60):
        async with open_event_bus() as bus:
            interrupt = Interrupt()
            opening = JobOpening(
                "gpu_cloud",
                settings.targets["gpu_cloud"],
                JobNeeds(),
                create,
                runs,
                bus,
                interrupt,
                _refused,
                settings=settings,
                fail=fail,
            )

            async def open_it() -> None:
                async with RUNPOD.open(opening):
                    raise AssertionError("a pod interrupted while it starts is no machine")

            async with trio.open_nursery() as nursery:
                nursery.start_soon(interrupt_once_a_pod_exists, setup, interrupt)
                with pytest.raises(OverbrainerError) as caught:
                    await open_it()
    assert caught.value.exit_code == 130
    assert caught.value.message == (
        f"interrupted: run {JOB_ID} stopped before its job started; it has no pod left"
    )
    assert failed == ["interrupted before its job started"]
    assert setup.fake.pods == {}


async def interrupt_once_a_pod_exists(setup: Setup, interrupt: Interrupt) -> None:
    while not setup.fake.pods:  # noqa: ASYNC110 - the fake's state
        await trio.sleep(0.02)
    interrupt.fire()


async def test_a_job_serving_a_model_prices_its_pod_first_and_a_lost_job_deletes_it(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = project_settings(setup, monkeypatch)
    target = settings.targets["gpu_cloud"]
    runs = setup.project / "runs"
    priced: list[str] = []

    async def create(workdir: str, claim: Claim | None) -> str:
        (runs / JOB_ID).mkdir(parents=True)
        # The price is told before the pod is made: nothing was created yet.
        assert priced == [] and setup.fake.pods == {}
        return JOB_ID

    async def fail(message: str) -> None:
        raise AssertionError(message)

    needs = JobNeeds(model_bytes=10**9, end_if_lost=True)
    with trio.fail_after(60):
        async with open_event_bus() as bus:
            opening = JobOpening(
                "gpu_cloud",
                target,
                needs,
                create,
                runs,
                bus,
                Interrupt(),
                _refused,
                settings=settings,
                fail=fail,
                priced=priced.append,
            )
            async with RUNPOD.open(opening) as machine:
                assert not machine.holds_runs
                assert setup.fake.pods != {}
                # The job cannot be followed and its pod is still there: it goes.
                assert await machine.end(Ended(Ending.LOST, why="unreachable")) is None
    (words,) = priced
    assert words.startswith("a new Runpod pod ")
    assert setup.fake.pods == {}
    assert pod_record(setup.project, JOB_ID)["state"] == "deleted"
