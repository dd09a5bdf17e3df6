"""The one job lifecycle on a machine and a job kind made for the test: the order of its phases,
what Ctrl-C does by the job kind's `on_interrupt`, a guard that trips, and the machine ended
whatever the conclusion raised. The real kinds are tested end to end by the train, compare
and export tests; these pin what a new machine (a pod, a cluster) may rely on."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import attrs
import pytest
import trio

from overbrainer.events.bus import EventBus, open_event_bus
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.model.job_kind import JobKind as JobType
from overbrainer.model.job_status import Exited, JobStatus, Running
from overbrainer.model.json_values import JsonValue
from overbrainer.targets.executor import JobRef
from overbrainer.targets.machine import (
    Claim,
    Ended,
    Ending,
    JobNeeds,
    JobOpening,
    JobPlan,
    JobSpec,
    Limit,
    Machine,
    RecordedJob,
    Sampler,
)
from overbrainer.training.follow_job import FollowError, FollowTimes
from overbrainer.training.job_kind import Interruption, Started
from overbrainer.training.job_lifecycle import run_job
from overbrainer.training.run_store import RunRecord, RunState
from overbrainer.training.summary import MetricsSummary

JOB = JobRef("/m/job1", 1234)


class Stopped(OverbrainerError):
    """The error the test's job kind ends a command with."""


@attrs.define
class FakeFollowed:
    """A job that runs until `done` is set, then exits 0."""

    calls: list[str]
    done: trio.Event
    lost: trio.Event

    async def read_from(self, name: str, offset: int, limit: int) -> bytes:
        return b""

    async def status(self) -> JobStatus:
        if self.lost.is_set():
            raise OSError("the machine cannot be reached")
        return Exited(0) if self.done.is_set() else Running()

    async def exists(self, name: str) -> bool:
        return False

    async def cancel(self) -> None:
        self.calls.append("cancel")


@attrs.define
class FakeMachine:
    """A machine that notes each call; its guard trips `limit` once `trip` is set."""

    calls: list[str] = attrs.field(factory=list)
    done: trio.Event = attrs.field(factory=trio.Event)
    trip: trio.Event = attrs.field(factory=trio.Event)
    started: trio.Event = attrs.field(factory=trio.Event)
    lost: trio.Event = attrs.field(factory=trio.Event)
    limit: Limit | None = None
    ended: list[Ended] = attrs.field(factory=list)
    answer: str | None = None
    """What `end` answers (a pod: gone, or not ended)."""
    words: OverbrainerError | None = None
    """What `detach` answers (a pod: its own interrupted words)."""

    workdir: str = "/m"
    here: bool = False
    home: str | None = "/home/u"
    holds_runs: bool = True

    def job_root(self, root: str) -> str:
        return root

    def plan(self, spec: JobSpec) -> JobPlan:
        self.calls.append("plan")
        return JobPlan("true")

    async def stage(self, local: Path, root: str, skip: Sequence[str] = ()) -> None:
        self.calls.append("stage")

    async def start(self, root: str, plan: JobPlan, secrets: Mapping[str, str]) -> JobRef:
        self.calls.append("start")
        self.started.set()
        return JOB

    def followed(self, job: JobRef) -> FakeFollowed:
        return FakeFollowed(self.calls, self.done, self.lost)

    async def request(self, job: JobRef, name: str, content: str) -> None:
        self.calls.append(f"request {name}")

    async def exists(self, path: str) -> bool:
        return False

    async def digests(self, root: str, entries: Sequence[str]) -> dict[str, str]:
        return {}

    async def remove(self, root: str, entries: Sequence[str]) -> None:
        self.calls.append("remove")

    async def fetch(
        self, job: JobRef, local: Path, entries: Sequence[str], exclude: Sequence[str] = ()
    ) -> None:
        self.calls.append("fetch")

    def sampler(self, job: JobRef) -> Sampler | None:
        return None

    async def guard(self, tripped: Callable[[Limit], None]) -> None:
        if self.limit is None:
            return
        await self.trip.wait()
        tripped(self.limit)

    async def end(self, ended: Ended) -> str | None:
        self.calls.append(f"end {ended.ending.value}")
        self.ended.append(ended)
        return self.answer

    async def detach(self) -> OverbrainerError | None:
        self.calls.append("detach")
        return self.words


@attrs.define
class FakeKind:
    """A kind whose machine is `machine`; it makes the record once it is 'connected'."""

    machine: FakeMachine

    @contextlib.asynccontextmanager
    async def open(self, opening: JobOpening) -> AsyncIterator[Machine]:
        self.machine.calls.append("open")
        await opening.create(self.machine.workdir, None)
        yield self.machine

    @contextlib.asynccontextmanager
    async def reach(self, recorded: RecordedJob) -> AsyncIterator[Machine]:
        yield self.machine

    def describe(self, job_dir: Path) -> str | None:
        return None

    def details(self, job_dir: Path) -> dict[str, JsonValue] | None:
        return None


@attrs.define
class FakeJob:
    """A job kind noting each phase; `hang_start` makes its start outlast its bound."""

    calls: list[str]
    on_interrupt: Interruption = Interruption.DETACH
    hang_start: bool = False
    conclude_fails: bool = False
    disposable: bool = False
    fetch_fails: bool = False
    type: JobType | None = None
    sampled: bool = False
    end_fails: bool = False
    needs: JobNeeds = attrs.field(factory=JobNeeds)
    times: FollowTimes = attrs.field(factory=lambda: FollowTimes(poll=1.0, reconnect=30.0))

    def interrupted_before(self) -> OverbrainerError:
        return Stopped("interrupted before the job started")

    async def create(self, workdir: str, claim: Claim | None) -> str:
        self.calls.append(f"create {workdir}")
        return "job1"

    def start_bound(self, machine: Machine) -> float:
        return 60.0

    async def start(self, machine: Machine, job_id: str) -> Started:
        if self.hang_start:
            await trio.sleep_forever()
        plan = machine.plan(JobSpec(job_id, "/m/job1", "/m/.c", (), {}))
        await machine.stage(Path("/here"), "/m/job1")
        job = await machine.start("/m/job1", plan, {})
        record = RunRecord(
            id=job_id,
            target="t",
            created="2026-12-07T00:00:00Z",
            remote_dir="/m/job1",
            job=None,
            state=RunState.RUNNING,
        )
        return Started(record, Path("/here"), job, f"job {job_id}", disposable=self.disposable)

    async def fail(self, job_id: str, message: str) -> None:
        self.calls.append(f"fail {message}")

    async def not_started(self, job_id: str) -> OverbrainerError:
        self.calls.append("not started")
        return WorkFailed(f"job {job_id} did not start in time")

    async def interrupted(self, machine: Machine, started: Started) -> OverbrainerError:
        self.calls.append("interrupted")
        return Stopped(f"interrupted: {started.subject}")

    async def fetch(self, machine: Machine, started: Started, status: JobStatus) -> str | None:
        await machine.fetch(started.job, started.job_dir, ("out",))
        if self.fetch_fails:
            raise WorkFailed("its results cannot be retrieved")
        return None

    async def conclude(
        self,
        machine: Machine,
        started: Started,
        status: JobStatus,
        summary: MetricsSummary,
        problem: str | None,
    ) -> str:
        self.calls.append(f"conclude {status}")
        if self.conclude_fails:
            raise WorkFailed("the job failed")
        return "done"


def _opening(interrupt: Interrupt, bus: EventBus) -> JobOpening:
    async def create(workdir: str, claim: Claim | None) -> str:
        raise AssertionError("run_job gives the kind the job's own create")

    return JobOpening(
        target_name="t",
        target=FakeTarget(),
        needs=JobNeeds(),
        create=create,
        local_root=Path("/here"),
        bus=bus,
        interrupt=interrupt,
        interrupted=lambda: Stopped("not the job's"),
    )


@attrs.frozen
class FakeTarget:
    kind: ClassVar[str] = "fake"


async def _run(
    job: FakeJob, machine: FakeMachine, interrupt: Interrupt, during: Callable[[], None]
) -> str:
    """Run the job; `during` acts once the job has started (ordered by the start's call)."""
    async with open_event_bus() as bus, trio.open_nursery() as nursery:

        async def act() -> None:
            await machine.started.wait()
            during()

        nursery.start_soon(act)
        try:
            return await run_job(job, FakeKind(machine), _opening(interrupt, bus))
        finally:
            nursery.cancel_scope.cancel()


async def test_the_phases_run_in_order_and_the_machine_ends_done(autojump_clock: object) -> None:
    machine = FakeMachine()
    job = FakeJob(machine.calls)
    result = await _run(job, machine, Interrupt(), machine.done.set)
    assert result == "done"
    assert machine.calls == [
        "open",
        "create /m",
        "plan",
        "stage",
        "start",
        "fetch",
        "conclude Exited(code=0)",
        "end done",
    ]
    assert machine.ended == [Ended(Ending.DONE, succeeded=True, retrieved=True)]


async def test_ctrl_c_detaches_a_detaching_job_and_leaves_its_machine(
    autojump_clock: object,
) -> None:
    machine = FakeMachine()
    interrupt = Interrupt()
    job = FakeJob(machine.calls, on_interrupt=Interruption.DETACH)
    with pytest.raises(Stopped, match="interrupted: job job1"):
        await _run(job, machine, interrupt, interrupt.fire)
    assert machine.calls[-2:] == ["detach", "interrupted"]
    assert "cancel" not in machine.calls and machine.ended == []


async def test_ctrl_c_cancels_a_cancelling_job_and_ends_its_machine(
    autojump_clock: object,
) -> None:
    machine = FakeMachine()
    interrupt = Interrupt()
    job = FakeJob(machine.calls, on_interrupt=Interruption.CANCEL)
    with pytest.raises(Stopped, match="interrupted: job job1"):
        await _run(job, machine, interrupt, interrupt.fire)
    assert machine.calls[-3:] == ["cancel", "end interrupted", "interrupted"]


async def test_a_tripped_guard_ends_the_machine_with_its_limit(autojump_clock: object) -> None:
    machine = FakeMachine(limit=Limit(Ending.COST_CAP, "the cost cap was reached"))
    job = FakeJob(machine.calls)
    with pytest.raises(WorkFailed, match="the cost cap was reached"):
        await _run(job, machine, Interrupt(), machine.trip.set)
    assert machine.ended == [Ended(Ending.COST_CAP)]
    assert "fetch" not in machine.calls
    assert machine.calls[-1] == "fail the cost cap was reached"


async def test_a_detaching_machine_with_its_own_words_ends_the_command_with_them(
    autojump_clock: object,
) -> None:
    machine = FakeMachine(words=Stopped("interrupted: the machine's words"))
    interrupt = Interrupt()
    job = FakeJob(machine.calls, on_interrupt=Interruption.DETACH)
    with pytest.raises(Stopped, match="the machine's words"):
        await _run(job, machine, interrupt, interrupt.fire)
    assert machine.calls[-1] == "detach" and machine.ended == []


async def test_a_lost_job_whose_machine_is_gone_fails_its_record(autojump_clock: object) -> None:
    machine = FakeMachine(answer="pod p1 no longer exists")
    job = FakeJob(machine.calls)
    with pytest.raises(WorkFailed, match="^job job1 failed: pod p1 no longer exists$"):
        await _run(job, machine, Interrupt(), machine.lost.set)
    assert machine.calls[-2:] == ["end lost", "fail pod p1 no longer exists"]
    assert machine.ended[0].why != ""


@pytest.mark.parametrize("end_fails", [True, False])
async def test_a_done_job_whose_machine_did_not_end(
    autojump_clock: object, end_fails: bool, caplog: pytest.LogCaptureFixture
) -> None:
    machine = FakeMachine(answer="not its pod: the delete was refused")
    job = FakeJob(machine.calls, end_fails=end_fails)
    if end_fails:
        with pytest.raises(WorkFailed, match="^job job1 ended, but not its pod: the delete"):
            await _run(job, machine, Interrupt(), machine.done.set)
    else:
        assert await _run(job, machine, Interrupt(), machine.done.set) == "done"
        assert "job job1 ended, but not its pod: the delete was refused" in caplog.text


async def test_the_machine_ends_even_when_the_conclusion_fails(autojump_clock: object) -> None:
    machine = FakeMachine()
    job = FakeJob(machine.calls, conclude_fails=True)
    with pytest.raises(WorkFailed, match="the job failed"):
        await _run(job, machine, Interrupt(), machine.done.set)
    assert machine.calls[-1] == "end done"


async def test_a_start_past_its_bound_is_recorded_and_ends_the_machine_not_started(
    autojump_clock: object,
) -> None:
    machine = FakeMachine()
    job = FakeJob(machine.calls, hang_start=True)
    async with open_event_bus() as bus:
        with pytest.raises(WorkFailed, match="job job1 did not start in time"):
            await run_job(job, FakeKind(machine), _opening(Interrupt(), bus))
    assert machine.calls == ["open", "create /m", "not started", "end not_started"]


@pytest.mark.parametrize(
    ("interruption", "last"),
    [(Interruption.DETACH, ["end lost"]), (Interruption.CANCEL, ["cancel", "end lost"])],
)
async def test_a_lost_job_ends_its_machine_as_lost(
    autojump_clock: object, interruption: Interruption, last: list[str]
) -> None:
    machine = FakeMachine()
    job = FakeJob(machine.calls, on_interrupt=interruption)
    with pytest.raises(FollowError):
        await _run(job, machine, Interrupt(), machine.lost.set)
    assert machine.calls[-len(last) :] == last


@pytest.mark.parametrize("disposable", [True, False])
async def test_a_disposable_job_s_machine_goes_however_the_job_ended(
    autojump_clock: object, disposable: bool
) -> None:
    # Lost while its machine is still there: a disposable job's machine is ended as done and
    # retrieved (an export is run again); another's is left for `train attach`.
    machine = FakeMachine()
    job = FakeJob(machine.calls, on_interrupt=Interruption.CANCEL, disposable=disposable)
    with pytest.raises(FollowError):
        await _run(job, machine, Interrupt(), machine.lost.set)
    lost = [Ended(Ending.LOST, why=machine.ended[0].why)]
    assert machine.ended == lost + [Ended(Ending.DONE, retrieved=True)] * disposable
    # Its files could not be fetched: the same.
    machine = FakeMachine()
    job = FakeJob(machine.calls, fetch_fails=True, disposable=disposable)
    with pytest.raises(WorkFailed, match="cannot be retrieved"):
        await _run(job, machine, Interrupt(), machine.done.set)
    assert machine.ended == [Ended(Ending.DONE, succeeded=True, retrieved=disposable)]
