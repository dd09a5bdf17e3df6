"""The Runpod REST v2 client: pods, catalog, volumes, templates (reference §7.1).

Only calls of Runpod's published description (`openapi-v2.json`): the reference's account
secrets (`/account/secrets`) are not in it, and overbrainer does not use them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

import trio

from overbrainer.llm import RetryPolicy
from overbrainer.targets.runpod.errors import RunpodError, create_error
from overbrainer.targets.runpod.http import (
    OnRetry,
    Reply,
    Retry,
    RunpodHttp,
    Timeouts,
    Unanswered,
    error_detail,
    open_runpod_http,
    runpod_shaped,
)
from overbrainer.targets.runpod.types import (
    DataCenter,
    GpuType,
    NetworkVolume,
    Pod,
    ShapeError,
    Template,
    parse_data_center,
    parse_gpu_type,
    parse_pod,
    parse_template,
    parse_volume,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

MIN_CUDA = "13.0"
GONE_CHECKS = 3
GONE_INTERVAL = 10.0


class RunpodApi:
    """The calls overbrainer makes to Runpod; every failure is a `RunpodError`."""

    def __init__(self, http: RunpodHttp) -> None:
        self.http = http

    async def _ok(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: object = None,
        policy: RetryPolicy | None = None,
    ) -> Reply:
        try:
            reply = await self.http.call(method, path, params=params, body=body, policy=policy)
        except Unanswered as error:
            raise self.http.unreachable(method, path, error) from None
        if not 200 <= reply.status < 300:
            raise self.http.failed(method, path, reply)
        return reply

    def _decode(self, method: str, path: str, reply: Reply, parse: Callable[[object], T]) -> T:
        try:
            return parse(reply.json())
        except (ValueError, ShapeError) as error:
            cause = str(error) if isinstance(error, ShapeError) else "not JSON"
            raise RunpodError(
                f"Runpod's answer to {method} {path} could not be read ({cause})"
            ) from None

    async def _get_list(
        self, path: str, key: str, parse: Callable[[object], T], params: dict[str, str]
    ) -> list[T]:
        reply = await self._ok("GET", path, params=params)
        return self._decode("GET", path, reply, lambda body: _items(body, key, parse))

    async def _listed(self, path: str, key: str, parse: Callable[[object], T]) -> list[T]:
        """`GET /<path>` with no query: the description lists the whole collection in one answer."""
        reply = await self._ok("GET", path)
        found, more = self._decode("GET", path, reply, lambda b: (_items(b, key, parse), _more(b)))
        if more:
            # Not in Runpod's description: say so rather than follow an undocumented cursor.
            log.warning(
                "Runpod's answer to GET %s names a next page; only its first page was read", path
            )
        return found

    # Pods

    async def create_pod(self, body: dict[str, object]) -> Pod:
        """`POST /pods`: retried only on 429; a failure is a `CreateError` with its fixed text."""
        try:
            reply = await self.http.call(
                "POST", "pods", body=body, retry=Retry.RATE_LIMIT, limit=self.http.timeouts.create
            )
        except Unanswered as error:
            log.info("Runpod: the create request got no answer: %s", error.cause)
            raise create_error(None, "") from None
        if not 200 <= reply.status < 300:
            detail = self.http.scrub(error_detail(reply))
            raise create_error(reply.status, reply.text, detail)
        try:
            return parse_pod(reply.json())
        except (ValueError, ShapeError):
            raise create_error(reply.status, "") from None

    async def get_pod(self, pod_id: str) -> Pod | None:
        """`GET /pods/{id}`; None when Runpod says (in its own error shape) there is none."""
        path = f"pods/{pod_id}"
        try:
            reply = await self.http.call("GET", path)
        except Unanswered as error:
            raise self.http.unreachable("GET", path, error) from None
        if reply.status == 404 and runpod_shaped(reply):
            return None
        if not 200 <= reply.status < 300:
            raise self.http.failed("GET", path, reply)
        return self._decode("GET", path, reply, parse_pod)

    async def list_pods(self) -> list[Pod]:
        """Every pod of the account (`GET /pods`)."""
        return await self._listed("pods", "pods", parse_pod)

    async def delete_pod(self, pod_id: str) -> bool:
        """`DELETE /pods/{id}`: True when deleted, False when Runpod no longer knew it."""
        path = f"pods/{pod_id}"
        try:
            reply = await self.http.call("DELETE", path)
        except Unanswered as error:
            raise self.http.unreachable("DELETE", path, error) from None
        if reply.status == 404 and runpod_shaped(reply):
            return False
        if not 200 <= reply.status < 300:
            raise self.http.failed("DELETE", path, reply)
        return True

    async def pod_gone(
        self, pod_id: str, *, checks: int = GONE_CHECKS, interval: float = GONE_INTERVAL
    ) -> bool:
        """Whether the pod is gone: `checks` Runpod-shaped 404s `interval` s apart, and absent
        from `GET /pods`. Never deletes anything."""
        for number in range(checks):
            if number:
                await trio.sleep(interval)
            if await self.get_pod(pod_id) is not None:
                return False
        return all(pod.id != pod_id for pod in await self.list_pods())

    # Catalog

    async def gpu_types(self, gpu_count: int = 1) -> list[GpuType]:
        """The Secure Cloud GPU catalog with stock for pods of `gpu_count` GPUs."""
        params = {
            "include": "AVAILABILITY",
            "product": "POD",
            "cloud": "SECURE",
            "count": str(gpu_count),
            "minCudaVersion": MIN_CUDA,
        }
        return await self._get_list("catalog/gpus", "gpus", parse_gpu_type, params)

    async def data_centers(self) -> list[DataCenter]:
        """The data centers with their GPU stock."""
        params = {"include": "GPU_AVAILABILITY"}
        return await self._get_list("catalog/datacenters", "dataCenters", parse_data_center, params)

    async def network_volumes(self) -> list[NetworkVolume]:
        """The account's network volumes."""
        return await self._get_list("network-volumes", "networkVolumes", parse_volume, {})

    async def network_volume(self, volume_id: str) -> NetworkVolume:
        """One network volume."""
        path = f"network-volumes/{volume_id}"
        return self._decode("GET", path, await self._ok("GET", path), parse_volume)

    async def resize_volume(self, volume_id: str, size_gb: int) -> NetworkVolume:
        """`PATCH /network-volumes/{id}` to `size_gb` (retried at most once)."""
        path = f"network-volumes/{volume_id}"
        once = RetryPolicy(max_retries=1, base=self.http.policy.base, cap=self.http.policy.cap)
        reply = await self._ok("PATCH", path, body={"size": size_gb}, policy=once)
        return self._decode("PATCH", path, reply, parse_volume)

    async def templates(self) -> list[Template]:
        """The account's pod templates: serverless ones dropped, each ID once (first kept)."""
        found = await self._listed("templates", "templates", parse_template)
        kept: dict[str, Template] = {}
        for template in found:
            if not template.serverless and template.id not in kept:
                kept[template.id] = template
        return list(kept.values())


def _items(body: object, key: str, parse: Callable[[object], T]) -> list[T]:
    if not isinstance(body, dict) or not isinstance(body.get(key), list):
        raise ShapeError(f"no `{key}` list")
    return [parse(item) for item in body[key]]


def _more(body: object) -> bool:
    """Whether the answer names a next page (`nextCursor`, which the description lacks)."""
    return isinstance(body, dict) and bool(body.get("nextCursor"))


@contextlib.asynccontextmanager
async def open_runpod(
    base_url: str,
    key: str,
    *,
    timeouts: Timeouts | None = None,
    policy: RetryPolicy | None = None,
    on_retry: OnRetry | None = None,
) -> AsyncIterator[RunpodApi]:
    """The Runpod client for the block; the key is registered for redaction."""
    async with open_runpod_http(
        base_url, key, timeouts=timeouts, policy=policy, on_retry=on_retry
    ) as http:
        yield RunpodApi(http)
