"""The `ray` kind's machine on a real two-node Ray cluster, driven as the job lifecycle drives any
machine: open (the record's ID, R claimed on the storage) → plan → stage → start (a submission)
→ follow (run files from the storage, the state from the Jobs API) → fetch → end; a recorded
job reached again, stopped by a snapshot request, cancelled; the stand-in trainer as Axolotl.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import attrs
import pytest
import trio
import yaml

from overbrainer.config.load import load_settings
from overbrainer.events.bus import EventBus, open_event_bus
from overbrainer.events.interrupt import Interrupt
from overbrainer.events.types import Event, Metric
from overbrainer.model.errors import WorkFailed
from overbrainer.model.job_status import Cancelled, Exited, JobStatus, Running
from overbrainer.targets import SNAPSHOT_REQUEST
from overbrainer.targets.executor import JobError, JobRef
from overbrainer.targets.machine import (
    Claim,
    Ended,
    Ending,
    FollowedJob,
    JobNeeds,
    JobOpening,
    JobSpec,
    Machine,
    RecordedJob,
)
from overbrainer.targets.ray.kind import RAY
from overbrainer.targets.ray.settings import RayTarget
from overbrainer.training.follow_job import FollowTimes, MetricsTail, follow
from overbrainer.training.prepare import job_commands, job_env, prepare_run
from overbrainer.training.retrieve import RESULTS
from overbrainer.training.summary import MetricsSummary
from tests.ray_support import TOKEN_ENV, RayCluster, dashboard_pid, shared_cluster
from tests.train_helpers import make_project, standin_env

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600), pytest.mark.xdist_group("ray")]

JOB_WITHIN = 180.0
TIMES = FollowTimes(poll=0.2, reconnect=30.0)


@pytest.fixture
def cluster(pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch) -> RayCluster:
    """The process's head and worker node (tests/ray_support.py), its token in the
    environment as a user sets it."""
    running = shared_cluster(pytestconfig)
    assert running.token is not None
    monkeypatch.setenv(TOKEN_ENV, running.token)
    return running


def interrupted() -> WorkFailed:
    """The error a Ctrl-C before the job started would end the command with."""
    return WorkFailed("interrupted")


@attrs.define
class Collected:
    """The events the follow loop published."""

    events: list[Event] = attrs.Factory(list)

    def event(self, bus: int, event: Event) -> None:
        self.events.append(event)

    def closed(self, bus: int) -> None:
        pass


@attrs.frozen
class Run:
    """A project's run prepared for the machine: its local directory and job spec."""

    run_id: str
    local: Path
    root: str
    spec: JobSpec


def target_of(cluster: RayCluster, storage: Path) -> RayTarget:
    """The target of the test's cluster, its storage a folder both the nodes and we see."""
    return RayTarget(
        address=cluster.dashboard_url,
        storage=str(storage),
        token_env=TOKEN_ENV,
        num_workers=2,
        resources_per_worker={"CPU": 1.0},
        request_secs=10,
        reconnect_secs=30,
    )


def opening_of(target: RayTarget, bus: EventBus, tmp_path: Path, run_id: str) -> JobOpening:
    """What the lifecycle hands the kind: `create` claims R on the storage as `run_id`."""

    async def create(workdir: str, claim: Claim | None) -> str:
        assert claim is not None
        assert await claim(f"{workdir}/{run_id}", "test-owner")
        return run_id

    return JobOpening(
        target_name="cluster",
        target=target,
        needs=JobNeeds(snapshots=True),
        create=create,
        local_root=tmp_path / "runs",
        bus=bus,
        interrupt=Interrupt(),
        interrupted=interrupted,
    )


def prepared(machine: Machine, tmp_path: Path, run_id: str, **knobs: str) -> Run:
    """The run's files as training prepares them, and its job: the stand-in as `axolotl`."""
    project = make_project(tmp_path / "project")
    training = load_settings(project, {}).training
    assert training is not None
    local = tmp_path / "runs" / run_id
    local.mkdir(parents=True)
    root = f"{machine.workdir}/{run_id}"
    seen_at = machine.job_root(root)
    data = project / "data"
    prepare_run(local, training, seen_at, data / "train.jsonl", data / "eval.jsonl")
    bin_dir = tmp_path / "bin"
    standin_env(bin_dir)
    env = {
        **job_env(seen_at),
        "PATH": str(bin_dir),
        "STANDIN_STEPS": "12",
        "STANDIN_PACE": "0.05",
        "STANDIN_ENV_FILE": f"{seen_at}/env.json",
        **knobs,
    }
    spec = JobSpec(run_id, root, "", job_commands(training), env, ("HF_TOKEN",))
    return Run(run_id, local, root, spec)


async def follow_to_end(machine: Machine, job: JobRef, bus: EventBus) -> JobStatus:
    """The project's follow loop over the machine's view of the job."""
    tail = MetricsTail(MetricsSummary())
    with trio.fail_after(JOB_WITHIN):
        return await follow(machine.followed(job), bus, tail, run_id=job.dir, times=TIMES)


async def wait_for_file(machine: Machine, job: JobRef, name: str) -> None:
    """Poll R on the storage until run file `name` is there (files have no event)."""
    with trio.fail_after(JOB_WITHIN):
        while True:
            if await machine.followed(job).exists(name):
                return
            await trio.sleep(0.2)


async def test_the_standin_trains_through_the_cluster_and_its_results_come_back(
    cluster: RayCluster, tmp_path: Path
) -> None:
    target = target_of(cluster, tmp_path / "storage")
    seen = Collected()
    async with (
        open_event_bus(observer=seen) as bus,
        RAY.open(opening_of(target, bus, tmp_path, "run-1")) as machine,
    ):
        run = prepared(machine, tmp_path, "run-1")
        plan = machine.plan(run.spec)
        await machine.stage(run.local, run.root)
        job = await machine.start(run.root, plan, {"HF_TOKEN": "hf-secret-0123456789"})
        assert job.pid is None
        assert job.ref is not None and job.ref.startswith("overbrainer-run-1-")
        assert job.dir == f"{tmp_path / 'storage'}/run-1"

        status = await follow_to_end(machine, job, bus)
        fetched = tmp_path / "fetched"
        await machine.fetch(job, fetched, RESULTS)
        assert await machine.end(Ended(Ending.DONE, succeeded=True, retrieved=True)) is None

    assert status == Exited(0), (tmp_path / "storage" / "run-1" / "job.log").read_text()
    steps = [event.metric.step for event in seen.events if isinstance(event, Metric)]
    assert steps and max(steps) == 12
    assert (fetched / "output" / "adapter_model.safetensors").read_bytes() == b"adapter at step 12"
    assert "standin: training 12 steps" in (fetched / "job.log").read_text()
    assert (fetched / "metrics.jsonl").stat().st_size > 0
    # Axolotl was told to train on Ray with the target's workers and resources.
    staged = yaml.safe_load((tmp_path / "storage" / "run-1" / "axolotl.yaml").read_text())
    assert staged["use_ray"] is True
    assert staged["ray_num_workers"] == 2
    assert staged["resources_per_worker"] == {"CPU": 1.0}
    # The secret reached the job, through the package, not the runtime env Ray shows.
    env = json.loads((tmp_path / "storage" / "run-1" / "env.json").read_text())
    assert env["HF_TOKEN"] == "hf-secret-0123456789"
    assert (tmp_path / "storage" / "run-1" / ".claim").read_text() == "test-owner\n"


async def stop_by_request(recorded: RecordedJob, job: JobRef, bus: EventBus) -> None:
    """`train attach` then `train stop`: the held plugin sees the request, saves a snapshot."""
    async with RAY.reach(recorded) as again:
        assert await again.followed(job).status() == Running()
        await wait_for_file(again, job, "metrics.jsonl")
        await again.request(job, SNAPSHOT_REQUEST, "requested\n")
        status = await follow_to_end(again, job, bus)
        assert status == Exited(0)
        assert await again.followed(job).exists("snapshot.json")


async def test_a_recorded_job_is_reached_again_stopped_by_request_then_another_cancelled(
    cluster: RayCluster, tmp_path: Path
) -> None:
    target = target_of(cluster, tmp_path / "storage")
    release = tmp_path / "release"
    async with (
        open_event_bus(observer=Collected()) as bus,
        RAY.open(opening_of(target, bus, tmp_path, "run-2")) as machine,
    ):
        run = prepared(machine, tmp_path, "run-2", STANDIN_HOLD=f"3:{release}")
        plan = machine.plan(run.spec)
        await machine.stage(run.local, run.root)
        job = await machine.start(run.root, plan, {})
        await machine.detach()  # Ctrl-C while following a training: it runs on

    async with open_event_bus(observer=Collected()) as bus:
        recorded = RecordedJob("cluster", target, job, run.local, bus, Interrupt(), interrupted)
        await stop_by_request(recorded, job, bus)

    # `train cancel` of another held job: stopped through the Jobs API.
    async with (
        open_event_bus(observer=Collected()) as bus,
        RAY.open(opening_of(target, bus, tmp_path, "run-3")) as machine,
    ):
        cancelled = prepared(machine, tmp_path / "3", "run-3", STANDIN_HOLD=f"3:{release}")
        plan = machine.plan(cancelled.spec)
        await machine.stage(cancelled.local, cancelled.root)
        job3 = await machine.start(cancelled.root, plan, {})
        await wait_for_file(machine, job3, "metrics.jsonl")
        await machine.followed(job3).cancel()
        assert await machine.followed(job3).status() == Cancelled()
        assert await machine.end(Ended(Ending.CANCELLED)) is None

    gone = attrs.evolve(job3, ref="overbrainer-never-submitted")
    lost = RecordedJob("cluster", target, gone, run.local, bus, Interrupt(), interrupted)
    with pytest.raises(JobError, match="no job `overbrainer-never-submitted`"):
        async with RAY.reach(lost):
            pass


@attrs.define
class Outages:
    """The followed job, with a note of the first status the head did not answer."""

    job: FollowedJob
    first: trio.Event = attrs.Factory(trio.Event)

    async def read_from(self, name: str, offset: int, limit: int) -> bytes:
        return await self.job.read_from(name, offset, limit)

    async def exists(self, name: str) -> bool:
        return await self.job.exists(name)

    async def cancel(self) -> None:
        await self.job.cancel()

    async def status(self) -> JobStatus:
        try:
            return await self.job.status()
        except OSError:
            self.first.set()
            raise


async def test_a_head_frozen_while_following_is_ridden_out(
    cluster: RayCluster, tmp_path: Path
) -> None:
    target = attrs.evolve(target_of(cluster, tmp_path / "storage"), request_secs=1)
    release = tmp_path / "release"
    async with (
        open_event_bus(observer=Collected()) as bus,
        RAY.open(opening_of(target, bus, tmp_path, "run-4")) as machine,
    ):
        run = prepared(machine, tmp_path, "run-4", STANDIN_HOLD=f"3:{release}")
        await machine.stage(run.local, run.root)
        job = await machine.start(run.root, machine.plan(run.spec), {})
        await wait_for_file(machine, job, "metrics.jsonl")
        followed = Outages(machine.followed(job))
        status: list[JobStatus] = []
        dashboard = dashboard_pid(cluster)

        async def following() -> None:
            tail = MetricsTail(MetricsSummary())
            status.append(await follow(followed, bus, tail, run_id="run-4", times=TIMES))

        async with trio.open_nursery() as nursery:
            os.kill(dashboard, signal.SIGSTOP)
            try:
                nursery.start_soon(following)
                with trio.fail_after(JOB_WITHIN):
                    await followed.first.wait()
                release.touch()  # the job ends while nobody can ask the head
            finally:
                os.kill(dashboard, signal.SIGCONT)
        assert await machine.end(Ended(Ending.DONE, succeeded=True, retrieved=True)) is None
    assert status == [Exited(0)]
