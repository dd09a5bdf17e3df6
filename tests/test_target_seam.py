"""The target seam: a new kind is its own module plus one `register` call.

The toy `kind = "example"` below lives only in this test. It is registered, read from
overbrainer.toml, and a real `train` runs through its executor (this machine, recording what it
spawns), without a line of the flows knowing it exists.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import ClassVar

import attrs
import pytest
import trio

from overbrainer.config import load_settings
from overbrainer.config.errors import ConfigError
from overbrainer.config.report import report_lines
from overbrainer.config.settings import Runtime, Settings
from overbrainer.config.target_settings import SettingsKind, Shown, TargetSettings
from overbrainer.events.bus import open_event_bus
from overbrainer.events.interrupt import Interrupt
from overbrainer.flows.train import train_run
from overbrainer.model.errors import OverbrainerError
from overbrainer.model.json_values import JsonValue
from overbrainer.project.directory import Project
from overbrainer.targets import registry
from overbrainer.targets.executor import Executor, JobRef
from overbrainer.targets.host_machine import HostMachine, HostRuntime
from overbrainer.targets.kind import JobChecks, refuse_keep
from overbrainer.targets.local_executor import LocalExecutor
from overbrainer.targets.machine import JobNeeds, JobOpening, Machine, RecordedJob
from overbrainer.training.follow_job import FollowTimes
from overbrainer.training.run_store import Runs, RunState
from overbrainer.training.session import Session
from tests.train_helpers import Lines, make_project, standin_env


@attrs.frozen
class ExampleTarget:
    """`[targets.<n>] kind = "example"`: this machine, through the example executor."""

    venv: str | None = None
    image: str | None = None
    slots: int = 1

    kind: ClassVar[str] = "example"


def _example(target: TargetSettings) -> ExampleTarget:
    assert isinstance(target, ExampleTarget)
    return target


def _example_problems(name: str, target: TargetSettings) -> list[str]:
    slots = _example(target).slots
    return [f"targets.{name}.slots: must be at least 1"] if slots < 1 else []


def _example_summary(target: TargetSettings, shown: Shown) -> list[tuple[str, str]]:
    return [("", f"example, {_example(target).slots} slot(s)")]


EXAMPLE_SETTINGS = SettingsKind(
    name=ExampleTarget.kind,
    settings_type=ExampleTarget,
    summary=_example_summary,
    problems=_example_problems,
)


@attrs.frozen
class ExampleExecutor(LocalExecutor):
    """The local executor, keeping the directory of each job it spawns."""

    spawned: list[str] = attrs.field(factory=list)

    async def spawn(self, directory: str, commands: str, secrets: Mapping[str, str]) -> JobRef:
        """Note the job, then start it like the local executor."""
        self.spawned.append(directory)
        return await super().spawn(directory, commands, secrets)


@attrs.define
class ExampleKind:
    """The toy kind: native jobs here, each spawned through an ExampleExecutor."""

    executors: list[ExampleExecutor] = attrs.field(factory=list)
    name: str = ExampleTarget.kind
    settings: SettingsKind = EXAMPLE_SETTINGS
    makes_pod: bool = False

    def check(
        self, name: str, target: TargetSettings, needs: JobNeeds, settings: Settings | None = None
    ) -> None:
        refuse_keep(needs)
        if not isinstance(target, ExampleTarget):
            raise ConfigError(f"targets.{name} is not an example target")

    def checks(self, target: TargetSettings) -> JobChecks:
        return JobChecks(axolotl=True, here=True)

    def left_job(self, target: TargetSettings, job_dir: Path, run_id: str) -> JobRef | None:
        return None

    def alive(self, job_dir: Path, job: JobRef) -> bool | None:
        return None

    async def quote(self, settings: Settings, target: TargetSettings, model: Path) -> str | None:
        return None

    @contextlib.asynccontextmanager
    async def connect(
        self,
        name: str,
        target: TargetSettings,
        runs_root: Path,
        interrupt: Interrupt,
        interrupted: Callable[[], OverbrainerError],
    ) -> AsyncIterator[Executor]:
        executor = ExampleExecutor(runs_root)
        self.executors.append(executor)
        yield executor

    @contextlib.asynccontextmanager
    async def open(self, opening: JobOpening) -> AsyncIterator[Machine]:
        executor = ExampleExecutor(opening.local_root)
        self.executors.append(executor)
        await opening.create(executor.workdir, None)
        yield HostMachine(executor, HostRuntime(Runtime.NATIVE))

    @contextlib.asynccontextmanager
    async def reach(self, recorded: RecordedJob) -> AsyncIterator[Machine]:
        machine = HostMachine(ExampleExecutor(recorded.job_dir.parent), HostRuntime(Runtime.NATIVE))
        machine.job = recorded.job
        yield machine

    def describe(self, job_dir: Path) -> str | None:
        return None

    def details(self, job_dir: Path) -> dict[str, JsonValue] | None:
        return None


@pytest.fixture
def example_kind() -> Iterator[ExampleKind]:
    kind = ExampleKind()
    registry.register(kind)
    try:
        yield kind
    finally:
        registry.unregister(kind.name)


async def test_a_job_runs_through_a_kind_registered_by_a_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, example_kind: ExampleKind
) -> None:
    root = make_project(tmp_path / "p")
    with (root / "overbrainer.toml").open("a", encoding="utf-8") as toml:
        toml.write('\n[targets.toy]\nkind = "example"\n')
    env = standin_env(tmp_path / "bin", STANDIN_STEPS="3")
    monkeypatch.setenv("PATH", env["PATH"])
    settings = load_settings(root, environ={})
    toy: object = settings.targets["toy"]
    assert toy == ExampleTarget()
    assert "targets.toy = example, 1 slot(s)" in report_lines(settings)  # as its kind words it
    assert registry.kind_of(settings.targets["toy"]) is example_kind

    lines = Lines()
    with trio.fail_after(60):
        async with open_event_bus() as bus:
            session = Session(settings, Project(root), bus, Interrupt(), FollowTimes(poll=0.05))
            record = await train_run(session, lines, target_name="toy")

    assert record.target == "toy"
    assert record.state is RunState.SUCCEEDED, Runs(root / "runs").load(record.id)
    (executor,) = example_kind.executors
    assert executor.spawned == [str((root / "runs" / record.id).resolve())]
    assert any("succeeded" in line for line in lines.lines), lines.lines


def test_an_unregistered_kind_is_refused_by_the_config_reader(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    with (root / "overbrainer.toml").open("a", encoding="utf-8") as toml:
        toml.write('\n[targets.toy]\nkind = "example"\n')
    with pytest.raises(ConfigError, match="expected kind local, ssh, runpod or ray"):
        load_settings(root, environ={})


def test_a_registered_kind_checks_its_own_table(tmp_path: Path, example_kind: ExampleKind) -> None:
    root = make_project(tmp_path / "p")
    with (root / "overbrainer.toml").open("a", encoding="utf-8") as toml:
        toml.write('\n[targets.toy]\nkind = "example"\nslots = 0\n')
    with pytest.raises(ConfigError) as refused:
        load_settings(root, environ={})
    assert "targets.toy.slots: must be at least 1" in str(refused.value)
