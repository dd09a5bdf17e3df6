"""What each built-in kind answers for the flows above `targets/` (issue 42): the checks that
used to branch on `on_this_machine`, `makes_pod`, `runtime()` and `engine()`."""

from __future__ import annotations

from pathlib import Path

import pytest

from overbrainer.config import load_settings
from overbrainer.config.settings import Engine as ConfigEngine
from overbrainer.config.settings import ListOrAuto, Runtime
from overbrainer.model.errors import UsageError
from overbrainer.targets import JobNeeds, LocalTarget, RunpodKeyError, SshTarget, kind_of
from overbrainer.targets.executor import JobRef
from overbrainer.targets.job_script import Engine
from overbrainer.targets.kind import JobChecks
from overbrainer.targets.runpod.settings import RunpodTarget
from tests.train_helpers import make_project

POD = RunpodTarget(gpu_types=ListOrAuto(auto=True), max_hours=1)
NATIVE = LocalTarget(runtime=Runtime.NATIVE)
PODMAN = LocalTarget(runtime=Runtime.DOCKER, engine=ConfigEngine.PODMAN)
SSH = SshTarget(runtime=Runtime.NATIVE, host="h")


def test_keep_pod_is_refused_by_a_kind_that_makes_no_machine() -> None:
    for target in (NATIVE, SSH):
        with pytest.raises(UsageError, match=r"^--keep-pod only applies to a runpod target$"):
            kind_of(target).check("t", target, JobNeeds(keep=True))
        kind_of(target).check("t", target, JobNeeds())
    kind_of(POD).check("gpu", POD, JobNeeds(keep=True))


def test_the_runpod_kind_checks_its_key_only_when_given_the_settings(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    without = load_settings(root, environ={})
    with pytest.raises(RunpodKeyError, match="runpod.api_key is not set"):
        kind_of(POD).check("gpu", POD, JobNeeds(), without)
    kind_of(POD).check("gpu", POD, JobNeeds())  # the machine checks it when it opens
    kind_of(NATIVE).check("t", NATIVE, JobNeeds(), without)  # a host needs no key
    with_key = load_settings(root, environ={"OVERBRAINER_RUNPOD__API_KEY": "k"})
    kind_of(POD).check("gpu", POD, JobNeeds(), with_key)


def test_each_kind_says_what_to_check_before_a_job() -> None:
    assert kind_of(NATIVE).checks(NATIVE) == JobChecks(axolotl=True, here=True)
    assert kind_of(PODMAN).checks(PODMAN) == JobChecks(here=True, engine="podman")
    assert kind_of(SSH).checks(SSH) == JobChecks(axolotl=True)
    ssh_docker = SshTarget(runtime=Runtime.DOCKER, host="h")
    assert kind_of(ssh_docker).checks(ssh_docker) == JobChecks()  # its engine is not here
    assert kind_of(POD).checks(POD) == JobChecks()  # the image holds Axolotl


def test_only_the_local_kind_finds_a_left_job_and_checks_it_here(tmp_path: Path) -> None:
    job_dir = tmp_path / "20260101-000000-abcd"
    job_dir.mkdir()
    assert kind_of(PODMAN).left_job(PODMAN, job_dir, job_dir.name) is None  # no job.pid
    (job_dir / "job.pid").write_text("1\n")
    assert kind_of(PODMAN).left_job(PODMAN, job_dir, job_dir.name) is None  # never PID 1
    (job_dir / "job.pid").write_text("4242\n")
    container = (Engine.PODMAN, f"overbrainer-{job_dir.name}")
    assert kind_of(PODMAN).left_job(PODMAN, job_dir, job_dir.name) == JobRef(
        str(job_dir), 4242, container
    )
    assert kind_of(NATIVE).left_job(NATIVE, job_dir, "x") == JobRef(str(job_dir), 4242)
    for target in (SSH, POD):
        assert kind_of(target).left_job(target, job_dir, job_dir.name) is None
        assert kind_of(target).alive(job_dir, JobRef(str(job_dir), 4242)) is None
    (job_dir / "exit_code").write_text("0\n")
    assert kind_of(NATIVE).alive(job_dir, JobRef(str(job_dir), 4242)) is False


async def test_only_a_kind_that_makes_a_machine_quotes_it(tmp_path: Path) -> None:
    settings = load_settings(make_project(tmp_path / "p"), environ={})
    model = tmp_path / "m.gguf"
    assert await kind_of(NATIVE).quote(settings, NATIVE, model) is None
    assert await kind_of(SSH).quote(settings, SSH, model) is None
    assert await kind_of(POD).quote(settings, POD, model) is None  # no key: no price asked
