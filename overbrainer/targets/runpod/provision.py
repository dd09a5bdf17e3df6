"""Provisioning a run's Runpod pod (§7.5): keys, the create walk, ready, delete."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import attrs
import trio

from overbrainer.config.settings import RunpodTarget
from overbrainer.events.bus import EventBus
from overbrainer.events.types import PodStatusChanged
from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.model.pod_status import (
    DeleteReason,
    PodCreated,
    PodCreating,
    PodDeleted,
    PodDeleting,
    PodReady,
    PodStatus,
    PodUnavailable,
)
from overbrainer.model.utc import rfc3339
from overbrainer.targets.job_names import POLL_ENV
from overbrainer.targets.runpod.api import RunpodApi
from overbrainer.targets.runpod.auto import (
    MAX_OUT_OF_STOCK,
    AutoError,
    Limits,
    in_stock,
    pick_data_centers,
    pick_gpu_types,
    picked_line,
)
from overbrainer.targets.runpod.create_body import PodRequest, create_body, pod_name, workdir
from overbrainer.targets.runpod.errors import CreateError, CreateFailure, RunpodError
from overbrainer.targets.runpod.keys import (
    RunKeys,
    announced_host_key,
    forget_client_key,
    host_alias,
    make_keys,
    write_known_hosts,
    write_ssh_config,
)
from overbrainer.targets.runpod.pod_logs import MAX_TAIL, PodLogsGone, stream_pod_logs
from overbrainer.targets.runpod.pod_record import (
    Attempt,
    AttemptResult,
    DeletedBy,
    PodRecord,
    PodSsh,
    PodState,
    save_pod_record,
    spend,
)
from overbrainer.targets.runpod.scripts import bootstrap_script
from overbrainer.targets.runpod.types import GpuType, Pod, SshEndpoint
from overbrainer.targets.ssh_open import open_ssh, ssh_client_of
from overbrainer.targets.ssh_session import SshExecutor

log = logging.getLogger(__name__)

POD_POLL = 5.0
"""Seconds between looks at a pod while it starts (tests shorten it with the poll hook)."""
REACH_LIMIT = 15 * 60.0
HOST_KEY_READ = 30.0
"""Seconds one read of the pod's log stream may wait for its host-key line (Runpod holds the
stream open, sending lines as the pod prints them)."""
PREFLIGHT_LIMIT = 180.0
DELETE_LIMIT = 60.0
CREATE_BOUND = 300.0
"""Seconds a shielded create may take: its attempt saved, the call, the pod it made saved."""
RECORD_BOUND = 30.0
"""Seconds a shielded write of `pod.json` may take."""
VERDICT_BYTES = 4096
BANNER_LIMIT = 10.0
AMBIGUOUS_PER_TYPE = 2


class ProvisionFailed(WorkFailed):
    """No ready pod: the run fails with this message."""


class NotDeleted(WorkFailed):
    """A delete that Runpod did not confirm: the walk stops (a pod may be left)."""


def pod_poll() -> float:
    """The pause between looks at a starting pod: 5 s, or the tests' poll hook."""
    try:
        value = float(os.environ.get(POLL_ENV, ""))
    except ValueError:
        return POD_POLL
    return value if 0 < value < POD_POLL else POD_POLL


class RecordDirs(Protocol):
    """Where the records of a pod's job live: `runs/`, or a run's `compares/`, `exports/`."""

    @property
    def root(self) -> Path:
        """The folder holding one directory per record."""
        ...

    def dir_of(self, run_id: str) -> Path:
        """The directory of record `run_id`."""
        ...


class HasId(Protocol):
    """A record with an ID (a run's, a compare's or an export's)."""

    @property
    def id(self) -> str:
        """The record's ID."""
        ...


D = TypeVar("D", bound=RecordDirs)
R = TypeVar("R", bound=HasId)


@attrs.define
class PodRun(Generic[D, R]):
    """A run's pod while overbrainer provisions, follows and ends it."""

    api: RunpodApi
    bus: EventBus
    runs: D
    run: R
    target: RunpodTarget
    keep: bool
    stopped: Callable[[], bool]
    """Whether the user asked to stop (Ctrl-C, the TUI's abandon): checked between steps."""
    pod: PodRecord
    keys: RunKeys | None = None
    created_mono: float | None = None
    vram_floor_gb: int | None = None
    """The estimate's VRAM floor for `gpu_types = "auto"` without `min_vram_gb` (§8)."""
    noun: str = "run"
    """What the pod's job is for the user: `run`, or `compare`/`export` for a run's job."""

    @property
    def run_id(self) -> str:
        """The run's ID."""
        return self.run.id

    @property
    def subject(self) -> str:
        """`run <id>` (or `compare <id>`, `export <id>`): what messages name."""
        return f"{self.noun} {self.run_id}"

    @property
    def shown_dir(self) -> str:
        """The record's directory as messages show it: `runs/<id>`, or a run's job's."""
        if self.runs.root.name == "runs":
            return f"runs/{self.run_id}"
        return f"runs/{self.runs.root.parent.name}/{self.runs.root.name}/{self.run_id}"

    @property
    def remote_dir(self) -> str:
        """R: the run's directory on the pod."""
        return f"{workdir(self.target)}/{self.run_id}"

    async def save(self, **changes: Any) -> None:
        """Change `pod.json` (atomically), shielded: a Ctrl-C never loses what it names."""
        self.pod = attrs.evolve(self.pod, **changes)
        with trio.fail_after(RECORD_BOUND, shield=True):
            await trio.to_thread.run_sync(save_pod_record, self.runs.dir_of(self.run_id), self.pod)

    def publish(self, status: PodStatus) -> None:
        """Tell the front end (the `pod: …` lines)."""
        self.bus.publish(PodStatusChanged(status))

    async def set_attempt(self, result: AttemptResult, **changes: Any) -> None:
        """Record what the last create call gave."""
        *done, last = self.pod.attempts
        changed = attrs.evolve(last, result=result, **changes)
        await self.save(attempts=(*done, changed))


def new_pod_run(
    api: RunpodApi,
    bus: EventBus,
    runs: D,
    run: R,
    target: RunpodTarget,
    *,
    keep: bool,
    stopped: Callable[[], bool],
    vram_floor_gb: int | None = None,
    noun: str = "run",
) -> PodRun[D, R]:
    """The pod of a new run (or of a run's job), before anything is asked of Runpod."""
    record = PodRecord(
        run_id=run.id,
        state=PodState.CREATING,
        keep=keep,
        gpu_count=target.gpu_count,
        max_cost_usd=None if keep else target.max_cost_usd,
        network_volume_id=target.network_volume_id,
        max_volume_gb=target.max_volume_gb,
    )
    return PodRun(
        api, bus, runs, run, target, keep, stopped, record, vram_floor_gb=vram_floor_gb, noun=noun
    )


async def provision(run: PodRun[D, R]) -> bool:
    """Keys, the create walk, a ready pod (§7.5 steps 1-4).

    False when the user stopped it between steps (the caller deletes any pod). Raises
    ProvisionFailed (or another OverbrainerError) when no pod became ready.
    """
    run_dir = run.runs.dir_of(run.run_id)
    run.keys = await make_keys(run_dir, run.run_id)
    if run.stopped():
        return False
    if run.target.network_volume_id is not None:
        volume = await run.api.network_volume(run.target.network_volume_id)
        log.info("pod: network volume %s holds %d GB", volume.id, volume.size_gb)
    walk = await _choices(run)
    problems: list[str] = []
    not_ready: list[str] = []
    while walk.types:
        if run.stopped():
            return False
        gpu_type = walk.types.pop(0)
        walk.tried(gpu_type)
        made = await _try_type(run, gpu_type, walk.data_centers, problems, not_ready)
        if made is not None:
            return await _after_ready(run, made)
        if walk.auto:
            await _reread(run, walk)
    raise ProvisionFailed(_walk_failure(problems, not_ready, run.target))


@attrs.define
class Walk:
    """The GPU types still to try and the data centers to ask for; with `auto`, what was
    tried and how many out-of-stock types were, over the whole walk."""

    types: list[str]
    data_centers: tuple[str, ...]
    auto: bool = False
    out_of_stock: set[str] = attrs.field(factory=set)
    done: set[str] = attrs.field(factory=set)
    out_of_stock_tried: int = 0

    def tried(self, gpu_type: str) -> None:
        """Note a type as tried (never tried again in this walk)."""
        self.done.add(gpu_type)
        if gpu_type in self.out_of_stock:
            self.out_of_stock_tried += 1


def _limits(run: PodRun[D, R], data_centers: tuple[str, ...]) -> Limits:
    target = run.target
    return Limits(
        gpu_count=target.gpu_count,
        min_vram_gb=target.min_vram_gb,
        max_price_per_hour=target.max_price_per_hour,
        data_center_ids=data_centers,
        vram_floor_gb=run.vram_floor_gb,
    )


def _pick(run: PodRun[D, R], walk: Walk, catalog: list[GpuType], wanted: tuple[str, ...]) -> None:
    """Fill the walk from the catalog (types not tried yet), `auto` data centers too."""
    fresh = [gpu for gpu in catalog if gpu.id not in walk.done]
    left = MAX_OUT_OF_STOCK - walk.out_of_stock_tried
    chosen = pick_gpu_types(fresh, _limits(run, wanted), left)
    log.info("%s", picked_line(chosen))
    walk.types = [gpu.id for gpu in chosen]
    walk.out_of_stock = {gpu.id for gpu in chosen if not in_stock(gpu, wanted)}
    if run.target.data_center_ids.auto:
        walk.data_centers = tuple(pick_data_centers(chosen, run.target.gpu_count))


async def _reread(run: PodRun[D, R], walk: Walk) -> None:
    """After an `auto` type that could not be placed: the catalog again, the rest re-sorted;
    a failed re-read keeps the order (warned)."""
    target = run.target
    wanted = () if target.data_center_ids.auto else target.data_center_ids.items
    try:
        catalog = await run.api.gpu_types(target.gpu_count)
    except RunpodError as error:
        log.warning(
            'cannot read Runpod\'s GPU catalog again (%s): the other gpu_types = "auto" '
            "picks are tried in their first order",
            error.message,
        )
        return
    try:
        _pick(run, walk, catalog, wanted)
    except AutoError as error:
        log.info("pod: %s", error.message)
        walk.types = []


async def _choices(run: PodRun[D, R]) -> Walk:
    """The GPU types to walk and the data centers to ask for (`auto` resolved from the
    catalog)."""
    target = run.target
    wanted = () if target.data_center_ids.auto else target.data_center_ids.items
    if not target.gpu_types.auto:
        return Walk(list(target.gpu_types.items), wanted)
    catalog = await run.api.gpu_types(target.gpu_count)
    walk = Walk([], wanted, auto=True)
    _pick(run, walk, catalog, wanted)
    return walk


def _walk_failure(problems: list[str], not_ready: list[str], target: RunpodTarget) -> str:
    volume = " (check network_volume_id and data_center_ids)" if target.network_volume_id else ""
    if not_ready:
        count = len(not_ready)
        text = (
            f"no gpu_types entry gave a ready pod: {count} pod{'s' if count > 1 else ''} "
            f"{'were' if count > 1 else 'was'} created but never became ready, the last one "
            f"because {not_ready[-1]}"
        )
        if problems:
            text += f"; the other types could not be placed: {'; '.join(problems)}"
        return text + volume
    detail = f": {'; '.join(problems)}" if problems else ""
    return f"no gpu_types entry could be placed{detail}{volume}"


async def _try_type(
    run: PodRun[D, R],
    gpu_type: str,
    data_centers: tuple[str, ...],
    problems: list[str],
    not_ready: list[str],
) -> Pod | None:
    """Create a pod of one GPU type and wait until it is ready; None to try the next type."""
    ambiguous = 0
    while True:
        try:
            pod = await _create(run, gpu_type, data_centers)
        except CreateError as error:
            match error.failure:
                case CreateFailure.UNAVAILABLE | CreateFailure.FORBIDDEN:
                    result = (
                        AttemptResult.UNAVAILABLE
                        if error.failure is CreateFailure.UNAVAILABLE
                        else AttemptResult.FORBIDDEN
                    )
                    await run.set_attempt(result, detail=error.message)
                    run.publish(PodUnavailable(gpu_type, error.message))
                    problems.append(f"{gpu_type}: {error.message}")
                    return None
                case CreateFailure.AMBIGUOUS:
                    await run.set_attempt(AttemptResult.AMBIGUOUS, detail=error.message)
                    adopted = await _reconcile(run)
                    if adopted is not None:
                        pod = adopted
                        with trio.fail_after(RECORD_BOUND, shield=True):
                            await _record_created(run, pod)
                    else:
                        ambiguous += 1
                        if ambiguous < AMBIGUOUS_PER_TYPE and not run.stopped():
                            continue
                        problems.append(f"{gpu_type}: {error.message}")
                        return None
                case _:
                    result = (
                        AttemptResult.REFUSED
                        if error.failure is CreateFailure.NO_CREDITS
                        else AttemptResult.REJECTED
                    )
                    await run.set_attempt(result, detail=error.message)
                    raise ProvisionFailed(error.message) from None
        break
    why = await wait_ready(run, pod)
    if why is None:
        return pod
    if run.stopped():
        return None
    await run.set_attempt(AttemptResult.NOT_READY, detail=why)
    await remove(run, DeleteReason.NOT_READY)
    await run.save(state=PodState.CREATING, pod_id=None, ssh=None, host_key=None)
    not_ready.append(why)
    return None


async def _create(run: PodRun[D, R], gpu_type: str, data_centers: tuple[str, ...]) -> Pod:
    """One `POST /pods`, its attempt saved before it is sent and the pod it made saved after,
    all shielded (bounded by CREATE_BOUND): a Ctrl-C meanwhile never leaves a pod that
    `pod.json` does not name. A bound that passes is an unclear create (a sweep finds its
    pod)."""
    number = len(run.pod.attempts) + 1
    name = pod_name(run.run_id, number)
    deadline = None if run.keep else int(time.time() + run.target.max_hours * 3600)
    attempt = Attempt(name, gpu_type, rfc3339(), deadline, AttemptResult.SENT)
    assert run.keys is not None
    request = PodRequest(
        run_id=run.run_id,
        attempt=number,
        gpu_type=gpu_type,
        data_center_ids=data_centers,
        deadline_unix=deadline,
        api_url=run.api.http.base_url,
        authorized_key=run.keys.client_public,
        bootstrap=bootstrap_script(),
    )
    with trio.move_on_after(CREATE_BOUND, shield=True):
        await run.save(attempts=(*run.pod.attempts, attempt))
        run.publish(PodCreating(name, gpu_type))
        pod = await run.api.create_pod(create_body(run.target, request))
        await _record_created(run, pod)
        return pod
    raise CreateError(CreateFailure.AMBIGUOUS, f"no answer within {int(CREATE_BOUND)} s")


async def _reconcile(run: PodRun[D, R]) -> Pod | None:
    """After an unclear create: look for the pod it may have made (5 s, then 15 s later)."""
    name = run.pod.attempts[-1].name
    for wait in (pod_poll(), 3 * pod_poll()):
        await trio.sleep(wait)
        try:
            pods = await run.api.list_pods()
        except RunpodError as error:
            log.info("pod: cannot list pods to find the unclear create's pod: %s", error.message)
            continue
        for pod in pods:
            if pod.name == name:
                await run.set_attempt(AttemptResult.ADOPTED, pod_id=pod.id)
                log.info(
                    "pod: adopted %s, made by the create call that got no clear answer", pod.id
                )
                return pod
    return None


async def _record_created(run: PodRun[D, R], pod: Pod) -> None:
    attempt = run.pod.attempts[-1]
    if attempt.result is AttemptResult.SENT:
        await run.set_attempt(AttemptResult.CREATED, pod_id=pod.id)
    deadline = attempt.deadline_unix
    run.created_mono = trio.current_time()
    await run.save(
        state=PodState.PROVISIONING,
        pod_id=pod.id,
        gpu_type=attempt.gpu_type,
        data_center_id=pod.data_center_id,
        cost_per_hour=run.pod.cost_per_hour or (pod.cost if pod.cost > 0 else None),
        created_at=rfc3339(),
        created_unix=int(time.time()),
        deadline_unix=deadline,
        deadline=None if deadline is None else _unix_rfc3339(deadline),
    )
    run.publish(PodCreated(pod.id, attempt.gpu_type, pod.data_center_id, run.pod.cost_per_hour))


def _unix_rfc3339(moment: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))


async def wait_ready(run: PodRun[D, R], pod: Pod) -> str | None:
    """Reach the pod over SSH, then read its watchdog's verdict; why it is not ready, or None.

    A verdict of failure raises ProvisionFailed after deleting the pod (the run is refused).
    """
    endpoint = await _reach(run, pod.id)
    if isinstance(endpoint, str):
        return endpoint
    verdict = await _verdict(run, endpoint)
    if verdict is None:
        return "interrupted" if run.stopped() else "no verdict within 180s"
    if verdict == "ready":
        return None
    reason = (
        DeleteReason.BOOTSTRAP_FAILED
        if verdict.startswith("failed bootstrap:")
        else DeleteReason.REFUSED
    )
    await run.set_attempt(AttemptResult.REFUSED, detail=verdict)
    await remove(run, reason)
    raise ProvisionFailed(f"the pod's watchdog refused the run: {verdict}")


async def _reach(run: PodRun[D, R], pod_id: str) -> SshEndpoint | str:
    """Poll the pod until it has announced its host key and its sshd answers with that key
    (strictly checked); why not, as text."""
    run_dir = run.runs.dir_of(run.run_id)
    host_key: str | None = None
    with trio.move_on_after(REACH_LIMIT):
        while not run.stopped():
            found = await run.api.get_pod(pod_id)
            if found is None:
                return "the pod is gone"
            if found.status.dead:
                return f"the pod is {found.status.value}"
            if host_key is None:
                host_key = await _announced_host_key(run, pod_id)
                if host_key is not None:
                    await trio.to_thread.run_sync(write_known_hosts, run_dir, run.run_id, host_key)
                    await run.save(host_key=host_key)
            if host_key is not None and found.ssh is not None and await _ssh_banner(found.ssh):
                await trio.to_thread.run_sync(write_ssh_config, run_dir, run.run_id, found.ssh)
                if await _connects(run):
                    return found.ssh
            await trio.sleep(pod_poll())
        return "interrupted"
    minutes = int(REACH_LIMIT // 60)
    if host_key is None:
        return f"the pod did not print its SSH host key within {minutes} min"
    return f"SSH did not answer within {minutes} min"


async def _announced_host_key(run: PodRun[D, R], pod_id: str) -> str | None:
    """The host public key the pod printed on its container log (Runpod's documented
    `GET /pods/{id}/logs`), read for at most HOST_KEY_READ s; None when not there yet."""
    lines = stream_pod_logs(run.api.http, pod_id, source="container", tail=MAX_TAIL)
    with trio.move_on_after(HOST_KEY_READ):
        try:
            async with contextlib.aclosing(lines):
                async for line in lines:
                    key = announced_host_key(line.line)
                    if key is not None:
                        return key
        except PodLogsGone:
            return None  # the next look at the pod finds it gone
        except (OverbrainerError, OSError) as error:
            log.debug("pod: cannot read the pod's log for its host key yet: %s", error)
    return None


async def _ssh_banner(endpoint: SshEndpoint) -> bool:
    """Whether an sshd answers at the endpoint (its `SSH-` banner), before ssh itself tries."""
    with trio.move_on_after(BANNER_LIMIT):
        try:
            stream = await trio.open_tcp_stream(endpoint.host, endpoint.port)
        except OSError:
            return False
        async with stream:
            try:
                return (await stream.receive_some(256)).startswith(b"SSH-")
            except trio.BrokenResourceError:
                return False
    return False


def pod_ssh_config(run: PodRun[D, R]) -> str:
    """`runs/<id>/ssh/config`, absolute."""
    return str((run.runs.dir_of(run.run_id) / "ssh" / "config").absolute())


def open_pod_ssh(run: PodRun[D, R], target_name: str) -> AbstractAsyncContextManager[SshExecutor]:
    """The SSH executor of the job's pod, through the job's own ssh config (not connected),
    over the target's SSH client."""
    return open_ssh(
        target_name,
        host_alias(run.run_id),
        workdir(run.target),
        ssh_config=pod_ssh_config(run),
        client=ssh_client_of(run.target.ssh_client),
    )


async def _connects(run: PodRun[D, R]) -> bool:
    async with open_pod_ssh(run, "pod") as executor:
        try:
            await executor.connect()
        except OSError as error:
            log.debug("pod: not reachable yet: %s", error)
            return False
    return True


async def _verdict(run: PodRun[D, R], endpoint: SshEndpoint) -> str | None:
    """The watchdog's first line (`ready`, `failed …`), None when none came in time."""
    path = f"{run.remote_dir}/.pod/watchdog"
    async with open_pod_ssh(run, "pod") as executor:
        with trio.move_on_after(PREFLIGHT_LIMIT):
            while not run.stopped():
                try:
                    text = await executor.read_from(path, 0, VERDICT_BYTES)
                except (OSError, OverbrainerError) as error:
                    log.debug("pod: cannot read the watchdog's verdict yet: %s", error)
                    text = b""
                line = text.decode("utf-8", "replace").split("\n", 1)
                if len(line) == 2 and line[0].isprintable() and 0 < len(line[0]) <= 200:
                    await run.save(ssh=PodSsh(endpoint.host, endpoint.port, endpoint.user))
                    return line[0]
                await trio.sleep(pod_poll())
    return None


async def _after_ready(run: PodRun[D, R], pod: Pod) -> bool:
    ready_after = trio.current_time() - (run.created_mono or trio.current_time())
    await run.save(state=PodState.READY, ready_at=rfc3339())
    run.publish(PodReady(pod.id, ready_after, run.pod.deadline))
    await sweep(run, keep_pod=pod.id)
    return not run.stopped()


async def sweep(run: PodRun[D, R], keep_pod: str | None = None) -> None:
    """Delete every other pod of the run (its name or marker); undeletable ones are recorded."""
    try:
        pods = await run.api.list_pods()
    except RunpodError as error:
        log.warning("cannot list the pods of run %s: %s", run.run_id, error.message)
        return
    prefix = f"overbrainer-{run.run_id}-"
    strays = list(run.pod.stray_pods)
    for pod in pods:
        ours = pod.run_id == run.run_id or pod.name.startswith(prefix)
        if not ours or pod.id == keep_pod:
            continue
        run.publish(PodDeleting(pod.id, DeleteReason.DUPLICATE))
        try:
            await run.api.delete_pod(pod.id)
            run.publish(PodDeleted(pod.id))
        except RunpodError as error:
            log.warning("cannot delete pod %s of run %s: %s", pod.id, run.run_id, error.message)
            strays.append(pod.id)
    await run.save(stray_pods=tuple(dict.fromkeys(strays)))


async def remove(run: PodRun[D, R], reason: DeleteReason) -> None:
    """Delete the run's pod and wait until Runpod no longer shows it (NotDeleted after 60 s)."""
    pod_id = run.pod.pod_id
    if pod_id is None or run.pod.state is PodState.DELETED:
        return
    run.publish(PodDeleting(pod_id, reason))
    await run.save(state=PodState.DELETING)
    with trio.move_on_after(DELETE_LIMIT, shield=True) as call:
        await run.api.delete_pod(pod_id)
    if call.cancelled_caught:
        raise NotDeleted(f"Runpod did not answer the delete of pod {pod_id} within 60 s")
    with trio.move_on_after(DELETE_LIMIT):
        # Polling: Runpod tells nothing when a pod is finally gone.
        while await run.api.get_pod(pod_id) is not None:  # noqa: ASYNC110
            await trio.sleep(min(2.0, pod_poll()))
        uptime = None if run.pod.created_unix is None else time.time() - run.pod.created_unix
        cost = None
        if uptime is not None and run.pod.cost_per_hour is not None:
            cost = spend(run.pod.cost_per_hour, uptime)
        await run.save(
            state=PodState.DELETED,
            deleted_at=rfc3339(),
            deleted_by=DeletedBy.CLIENT,
            estimated_spend=cost,
        )
        run.publish(PodDeleted(pod_id, uptime, cost))
        return
    raise NotDeleted(f"pod {pod_id} still shows on Runpod 60 s after it was deleted")


async def forget_keys(run: PodRun[D, R]) -> None:
    """Once the run's last pod is gone: delete the private client key (the pod's host key
    never left the pod)."""
    await trio.to_thread.run_sync(forget_client_key, run.runs.dir_of(run.run_id))
