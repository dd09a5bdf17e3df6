"""Waiting for a created pod to be ready (§7.5 step 4): its announced host key, its sshd
answering with that key, then its watchdog's verdict."""

from __future__ import annotations

import contextlib
import logging

import trio

from overbrainer.model.errors import OverbrainerError
from overbrainer.model.pod_status import DeleteReason
from overbrainer.targets.runpod.keys import announced_host_key, write_known_hosts, write_ssh_config
from overbrainer.targets.runpod.pod_delete import remove
from overbrainer.targets.runpod.pod_logs import MAX_TAIL, PodLogsGone, stream_pod_logs
from overbrainer.targets.runpod.pod_record import AttemptResult, PodSsh
from overbrainer.targets.runpod.pod_run import (
    D,
    PodRun,
    ProvisionFailed,
    R,
    open_pod_ssh,
    pod_poll,
)
from overbrainer.targets.runpod.types import Pod, SshEndpoint

log = logging.getLogger(__name__)

REACH_LIMIT = 15 * 60.0
HOST_KEY_READ = 30.0
"""Seconds one read of the pod's log stream may wait for its host-key line (Runpod holds the
stream open, sending lines as the pod prints them)."""
PREFLIGHT_LIMIT = 180.0
VERDICT_BYTES = 4096
BANNER_LIMIT = 10.0


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
