"""What a local or SSH kind says of its jobs before one starts and after one was recorded."""

from __future__ import annotations

import logging
from pathlib import Path

from overbrainer.config.settings import Engine as ConfigEngine
from overbrainer.config.settings import Runtime
from overbrainer.model.job_status import Running
from overbrainer.targets.executor import JobError, JobRef
from overbrainer.targets.host_settings import HostSettings
from overbrainer.targets.job_script import Engine, container_name
from overbrainer.targets.kind import JobChecks
from overbrainer.targets.local import LocalJob, job_status

log = logging.getLogger(__name__)


def host_checks(target: HostSettings, here: bool) -> JobChecks:
    """A native job runs the machine's `axolotl`; a container job here needs its engine."""
    if target.runtime is Runtime.NATIVE:
        return JobChecks(axolotl=True, here=here, venv=target.venv)
    engine = (target.engine or ConfigEngine.DOCKER).value
    return JobChecks(here=here, engine=engine if here else None)


def left_local_job(target: HostSettings, job_dir: Path, run_id: str) -> JobRef | None:
    """The job a `preparing` run did start here: its `job.pid`, and its container, if any."""
    try:
        pid = int((job_dir / "job.pid").read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None
    if pid <= 1:
        return None
    container = None
    if target.runtime is Runtime.DOCKER:
        engine = Engine((target.engine or ConfigEngine.DOCKER).value)
        container = (engine, container_name(run_id))
    return JobRef(str(job_dir), pid, container)


def local_alive(job_dir: Path, job: JobRef) -> bool:
    """Whether the job's process group here still runs, as its status check says."""
    if job.pid is None:
        return False
    try:
        return isinstance(job_status(LocalJob(job_dir, job.pid)), Running)
    except (OSError, JobError) as error:
        log.debug("cannot check the job in %s: %s", job_dir, error)
        return False
