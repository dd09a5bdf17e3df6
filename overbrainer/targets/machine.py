"""One job's machine (issue 42): what the one job lifecycle asks of any kind of target.

A kind (`targets/kind.py`) opens a `Machine` for each job. The lifecycle (training's
`job_lifecycle`) orders the phases: plan, stage, start, follow beside the machine's guards,
fetch, end. Nothing above `targets/` asks which kind it holds: what differs between a process
here, one over SSH, one on a pod and one submitted to a cluster is behind these methods.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Protocol

import attrs

from overbrainer.config.settings import Settings
from overbrainer.config.target_settings import TargetSettings
from overbrainer.events.bus import EventBus
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError
from overbrainer.model.job_status import JobStatus
from overbrainer.model.json_values import JsonValue
from overbrainer.model.system_sample import SystemSample
from overbrainer.targets.executor import Executor, JobRef
from overbrainer.targets.job_script import Command, Engine


class FollowedJob(Protocol):
    """What following needs from a started job: its run files, status and cancel."""

    async def read_from(self, name: str, offset: int, limit: int) -> bytes:
        """Bytes of run file `name` from `offset` (empty when it does not exist)."""
        ...

    async def status(self) -> JobStatus:
        """The job's status now."""
        ...

    async def exists(self, name: str) -> bool:
        """Whether run file `name` exists."""
        ...

    async def cancel(self) -> None:
        """Stop the job (§4.4)."""
        ...


class Sampler(Protocol):
    """Takes system samples of the job's machine."""

    async def sample(self) -> SystemSample | None:
        """One sample, or None when this one is skipped (an earlier one is still stuck)."""
        ...


@attrs.frozen
class JobSpec:
    """What a job runs, before its machine wraps it (venv, container, pod env, entrypoint)."""

    run_id: str
    """Names the job's container (`overbrainer-<run_id>`) or its cluster submission."""
    root: str
    """R: the job's directory on the machine (`Machine.job_root` says how the job sees it)."""
    cache: str
    commands: Sequence[Command]
    env: Mapping[str, str]
    secrets: Sequence[str] = ()
    """Names of the secrets passed through to the job (their values go to `start`)."""
    tools: str | None = None
    """The machine's tool cache (llama.cpp of an export), given as OVERBRAINER_CACHE."""
    workdir: str = ""
    """Where the job works, relative to R (a nested compare or export job's folder)."""
    venv_on_path: bool = False
    """Natively, PATH is the machine's venv `bin` (a script that runs the venv's `python3`
    and `axolotl` by name: training's in-job export)."""


@attrs.frozen
class JobPlan:
    """The job's commands as its machine runs them, and its container, if any."""

    commands: str
    container: tuple[Engine, str] | None = None


@attrs.frozen
class JobNeeds:
    """What a job asks of its machine, for the kinds that size, check or keep one."""

    vram_floor_gb: int | None = None
    disk_gb: int | None = None
    image: str | None = None
    """An image the job needs instead of the target's (compare's `[compare] image`)."""
    keep: bool = False
    """`--keep-pod`: keep a machine made for the job after it ends."""
    snapshots: bool = False
    """The job honours a snapshot request (training)."""
    remove_container: bool = False
    """Force-remove the job's container whenever the job ends (a compare's server runs in it)."""
    model_bytes: int | None = None
    """The size of the model file the job serves (a compare's GGUF): a kind that makes a
    machine for the job sizes it by it, and prices it first (`JobOpening.priced`)."""
    end_if_lost: bool = False
    """A machine made for the job goes (unless kept) when the job can no longer be followed
    and the machine is still there (a compare's pod: deleted as unfollowed)."""
    nested_in: str | None = None
    """Where the job's directory goes on a machine that holds an earlier job's files it nests
    in (an export's `<run R>/exports`); a machine made for the job holds none, so the job's
    directory goes under the machine's workdir."""


class Ending(enum.Enum):
    """Why a job's machine is released."""

    DONE = "done"
    NOT_STARTED = "not_started"
    INTERRUPTED = "interrupted"
    CANCELLED = "cancelled"
    COST_CAP = "cost_cap"
    DEADLINE = "deadline"
    LOST = "lost"


@attrs.frozen
class Ended:
    """How a job ended, as its machine must know it to release itself."""

    ending: Ending
    succeeded: bool = False
    retrieved: bool = False
    """The job's files are here (a machine made for the job may go)."""
    why: str = ""
    """What went wrong, in words (a lost job: the error following it ended with)."""


@attrs.frozen
class Limit:
    """A guard that passed (a cost cap, a deadline): why, and the message the record gets."""

    ending: Ending
    message: str


Claim = Callable[[str, str], Awaitable[bool]]
"""`claim(root, owner)`: take R on the machine; False when another run holds it."""


@attrs.frozen
class JobOpening:
    """What a kind gets to open a machine for one new job."""

    target_name: str
    target: TargetSettings
    """The `[targets.NAME]` settings, of the kind's own class (it narrows them)."""
    needs: JobNeeds
    create: Callable[[str, Claim | None], Awaitable[str]]
    """Make the job's record once the machine's workdir is known: `create(workdir, claim)`
    chooses the job's ID (R = `<workdir>/<id>`; with `claim`, an ID whose R is taken is passed
    over) and returns it. A kind calls it exactly once."""
    local_root: Path
    """The project's `runs/` (a machine here works over it)."""
    bus: EventBus
    interrupt: Interrupt
    interrupted: Callable[[], OverbrainerError]
    """The error a Ctrl-C before the job started ends the command with."""
    settings: Settings | None = None
    """The project's settings, for a kind that uses an account of them (Runpod's key, URL)."""
    fail: Callable[[str], Awaitable[None]] | None = None
    """Record the job failed with this message: its machine was made after `create` but the
    job could not start on it (a pod that never became ready, a Ctrl-C before the start)."""
    job_dirs: Path | None = None
    """Where the job's own local directory is (`<job_dirs>/<id>`) when not under `local_root`:
    a run's compares/ or exports/ (a host machine works in `runs/`; a machine's own files, a
    pod's record, go there)."""
    check: Callable[[Executor], Awaitable[None]] | None = None
    """A check of a shell machine before the record is made (train: `axolotl` and a GPU
    there; refused with no run created); kinds without a shell leave it out."""
    priced: Callable[[str], None] | None = None
    """Told the price of a machine made for the job, in words, before it is made (a kind
    that prices one: with `needs.model_bytes`)."""


@attrs.frozen
class RecordedJob:
    """What a kind gets to reach a recorded job's machine again (attach, stop, cancel)."""

    target_name: str
    target: TargetSettings
    job: JobRef
    job_dir: Path
    """The job's local directory (`runs/<id>`, or a compare's or export's)."""
    bus: EventBus
    interrupt: Interrupt
    interrupted: Callable[[], OverbrainerError]
    settings: Settings | None = None
    """The project's settings, for a kind that uses an account of them (Runpod's key, URL)."""
    action: str = "attach"
    """What the command does to the job (`attach`, `stop`, `cancel`, or `stop_beside`: a stop
    while another process holds the project and follows the job, which only writes the
    request, asking no account): a kind's words for it, and whether a job whose machine is gone
    is failed (attach) or refused (exit 2)."""


class Machine(Protocol):
    """One job's machine, opened for it: where its files go, how it runs, what guards it."""

    @property
    def workdir(self) -> str:
        """The directory on the machine that holds job directories."""
        ...

    @property
    def here(self) -> bool:
        """Whether the job's directory is its local one (nothing to stage or fetch)."""
        ...

    @property
    def home(self) -> str | None:
        """The machine user's home (a venv's `~/`); None: this user's, the job runs here."""
        ...

    @property
    def holds_runs(self) -> bool:
        """Whether the runs' directories (R) are on it; False for a machine made for one job
        (a pod): a job brings along what it needs of its run."""
        ...

    def job_root(self, root: str) -> str:
        """R as the job sees it (a container mounts it at `/workspace/run`)."""
        ...

    def plan(self, spec: JobSpec) -> JobPlan:
        """The job's commands wrapped for this machine (venv, container, pod env, cluster)."""
        ...

    async def stage(self, local: Path, root: str, skip: Sequence[str] = ()) -> None:
        """Put the local tree `local` at `root` on the machine (nothing when `here`)."""
        ...

    async def start(self, root: str, plan: JobPlan, secrets: Mapping[str, str]) -> JobRef:
        """Start the job detached in `root`, secrets in its environment only; what identifies
        it from now on (a process group, a container, a cluster's job ID)."""
        ...

    def followed(self, job: JobRef) -> FollowedJob:
        """The job as the follow loop reads it."""
        ...

    async def request(self, job: JobRef, name: str, content: str) -> None:
        """Write run file `name` (a request the job polls, such as a snapshot request)."""
        ...

    async def exists(self, path: str) -> bool:
        """Whether `path` exists on the machine (a run's model, before staging it again)."""
        ...

    async def digests(self, root: str, entries: Sequence[str]) -> dict[str, str]:
        """SHA-256 of the files under the existing `entries` of `root` on the machine."""
        ...

    async def remove(self, root: str, entries: Sequence[str]) -> None:
        """Remove `entries` of `root` on the machine (what was staged); nothing when `here`."""
        ...

    async def fetch(
        self, job: JobRef, local: Path, entries: Sequence[str], exclude: Sequence[str] = ()
    ) -> None:
        """Bring entries of the job's directory into `local`, verified (nothing when `here`)."""
        ...

    def sampler(self, job: JobRef) -> Sampler | None:
        """System samples of the job's machine; None when it has none to give."""
        ...

    async def guard(self, tripped: Callable[[Limit], None]) -> None:
        """Run the machine's guards until cancelled (cost cap, deadline, lease, disk, pod log);
        call `tripped` when one passes. Returns at once when it has none."""
        ...

    async def end(self, ended: Ended) -> str | None:
        """The job is over, or never started: release the machine as `ended` says (remove a
        container, delete or keep a pod); bounded and shielded here. The problem to report,
        None when all is well."""
        ...

    async def detach(self) -> OverbrainerError | None:
        """The user stops following: leave the job and its machine running, close only the
        connection (a pod's watchdog stays armed). The error the command ends with when the
        machine has its own words (a pod: its price, how its watchdog ends it); None: the
        job kind's."""
        ...


class MachineKind(Protocol):
    """What the lifecycle asks of a kind of target (the part of `TargetKind` issue 42 adds)."""

    def open(self, opening: JobOpening) -> AbstractAsyncContextManager[Machine]:
        """A machine for a new job: made, reached, the job's record created through
        `opening.create`. Leaving it without `end` or `detach` ends it as not started."""
        ...

    def reach(self, recorded: RecordedJob) -> AbstractAsyncContextManager[Machine]:
        """The machine of a recorded job again; JobGone when it no longer exists (the job
        failed), UsageError when the command has nothing to act on."""
        ...

    def describe(self, job_dir: Path) -> str | None:
        """`runs ls`'s words for the job's machine, from local files only; None: nothing."""
        ...

    def details(self, job_dir: Path) -> dict[str, JsonValue] | None:
        """The facts behind `describe`'s words as JSON data (`runs ls --json`), from local
        files only; None: nothing to add."""
        ...
