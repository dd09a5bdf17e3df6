"""A loopback Runpod REST v2 fake whose every exchange is checked against Runpod's OpenAPI file.

The checks (`tests/runpod_contract.py`: `openapi-core` on Runpod's own file, unmodified) run on
every request and every answer: no call is skipped, so a call the file does not describe (a
path, a method) or a field it does not allow is a violation. A request that fails the check is
answered 400 in Runpod's error shape and recorded in `violations`; a test ends with
`assert fake.violations == []`.
"""

from __future__ import annotations

import contextlib
import json
import urllib.parse
from collections.abc import AsyncIterator

import attrs
import trio

from overbrainer.net.http_server import Request, Response, serve_http
from tests.pod_host import PodHost
from tests.runpod_contract import Json, check_request, check_response, openapi

KEY = "rpa_TESTKEY0123456789abcdefghijklmnop"


def problem(
    status: int, title: str, detail: str, headers: dict[str, str] | None = None
) -> Response:
    """An error in Runpod's own shape (`application/problem+json`)."""
    body = json.dumps({"title": title, "status": status, "detail": detail}).encode()
    all_headers = {"content-type": "application/problem+json", **(headers or {})}
    return Response(status, body, tuple(all_headers.items()))


def ok(body: Json, status: int = 200) -> Response:
    """A JSON answer."""
    return Response(status, json.dumps(body).encode(), (("content-type", "application/json"),))


@attrs.define
class Fault:
    """A scripted answer for the next request matching `method` and `path` (a prefix).

    `status` answers with Runpod's error shape (and `retry_after`); `delay` waits first;
    `held` waits until the test sets it (an answer that comes after what the test does first,
    however loaded the machine); `drop` closes the connection without answering; `body`
    answers these raw bytes.
    """

    method: str
    path: str
    status: int | None = None
    retry_after: str | None = None
    detail: str = "scripted fault"
    delay: float = 0.0
    held: trio.Event | None = None
    drop: bool = False
    body: bytes | None = None
    content_type: str = "application/problem+json"
    create: bool = False
    """Do what was asked first (a create makes its pod), then answer with the fault; with no
    status, body or drop, answer what was done after `delay`."""
    agent: str | None = None
    """Only for requests whose User-Agent starts with this (`overbrainer-watchdog`: the pod's)."""
    exact: bool = False
    """Only for requests to `path` itself, not to paths below it."""

    def matches(self, request: Request) -> bool:
        """Whether this fault answers the request."""
        path = "/v2/" + self.path
        if self.method != request.method or not request.path.startswith(path):
            return False
        if self.exact and request.path != path:
            return False
        agent = request.headers.get("user-agent", "")
        return self.agent is None or agent.startswith(self.agent)


def gpu(
    gpu_id: str,
    memory: int,
    price: float,
    *,
    availability: str = "HIGH",
    max_count: int = 8,
    data_centers: tuple[tuple[str, str], ...] = (("US-KS-2", "HIGH"),),
    secure: bool = True,
    name: str | None = None,
) -> Json:
    """A catalog GPU type as the API lists it."""
    return {
        "id": gpu_id,
        "name": name or gpu_id.replace("NVIDIA ", ""),
        "pool": None,
        "manufacturer": "NVIDIA",
        "memory": memory,
        "secure": secure,
        "community": True,
        "price": {"secure": price if secure else 0, "community": round(price * 0.7, 2)},
        "maxCount": {"secure": max_count if secure else 0, "community": 4},
        "availability": availability,
        "dataCenters": [
            {"id": dc, "name": dc.replace("-", " "), "availability": band}
            for dc, band in data_centers
        ],
    }


def pod_json(pod_id: str, name: str, gpu_id: str, env: dict[str, str], status: str) -> Json:
    """A pod as the API shows it (every field the description requires)."""
    return {
        "id": pod_id,
        "name": name,
        "image": "axolotlai/axolotl-cloud-term:test",
        "args": "",
        "disk": 50,
        "ports": ["22/tcp"],
        "env": env,
        "registry": None,
        "status": status,
        "actions": ["stop", "terminate"],
        "mounts": {},
        "gpu": {"id": gpu_id, "count": 1},
        "cloud": "SECURE",
        "dataCenterId": "US-KS-2",
        "cudaVersion": "13.0",
        "ssh": {
            "proxy": None,
            "direct": {
                "host": "127.0.0.1",
                "port": 2222,
                "username": "root",
                "command": "ssh root@127.0.0.1 -p 2222",
            },
        },
        "template": None,
        "cost": 0.44,
        "locked": False,
        "globalNetworking": {"enabled": False},
        "runtime": None,
        "createdAt": "2026-10-01T12:00:00Z",
        "startedAt": None,
    }


DEFAULT_GPUS: tuple[Json, ...] = (
    gpu("NVIDIA GeForce RTX 4090", 24, 0.69, data_centers=(("US-KS-2", "HIGH"),)),
    gpu("NVIDIA A40", 48, 0.40, availability="LOW", data_centers=(("EU-RO-1", "LOW"),)),
    gpu(
        "NVIDIA H100 80GB HBM3",
        80,
        2.69,
        data_centers=(("US-KS-2", "MEDIUM"), ("EU-RO-1", "HIGH")),
    ),
    gpu("NVIDIA RTX A6000", 48, 0.49, availability="NONE", data_centers=()),
    gpu("NVIDIA GeForce RTX 3090", 24, 0.22, secure=False, data_centers=()),
)
DEFAULT_DATA_CENTERS: tuple[Json, ...] = (
    {
        "id": "US-KS-2",
        "name": "US Kansas 2",
        "region": "NORTH_AMERICA",
        "globalNetwork": True,
        "networkVolumeTypes": ["STANDARD"],
        "compliance": [],
        "gpuAvailability": [
            {"id": "NVIDIA GeForce RTX 4090", "name": "RTX 4090", "availability": "HIGH"},
            {"id": "NVIDIA H100 80GB HBM3", "name": "H100 80GB HBM3", "availability": "MEDIUM"},
        ],
    },
    {
        "id": "EU-RO-1",
        "name": "EU Romania 1",
        "region": "EUROPE",
        "globalNetwork": False,
        "networkVolumeTypes": ["STANDARD", "HIGH_PERFORMANCE"],
        "compliance": ["GDPR"],
        "gpuAvailability": [
            {"id": "NVIDIA A40", "name": "A40", "availability": "LOW"},
            {"id": "NVIDIA RTX A6000", "name": "RTX A6000", "availability": "NONE"},
        ],
    },
)


def template(template_id: str, name: str, image: str, *, serverless: bool = False) -> Json:
    """A template as the API lists it."""
    return {
        "id": template_id,
        "name": name,
        "image": image,
        "args": "",
        "disk": 20,
        "mounts": {},
        "ports": ["22/tcp"],
        "env": {},
        "registry": None,
        "serverless": serverless,
        "public": False,
        "category": "NVIDIA",
        "startSsh": True,
        "startJupyter": False,
        "allowedCudaVersions": [],
    }


@attrs.define
class RunpodFake:
    """The fake's state, scripted faults, and the log of what it was asked."""

    key: str = KEY
    gpus: list[Json] = attrs.field(factory=lambda: list(DEFAULT_GPUS))
    data_centers: list[Json] = attrs.field(factory=lambda: list(DEFAULT_DATA_CENTERS))
    volumes: list[Json] = attrs.field(factory=list)
    templates: list[Json] = attrs.field(factory=list)
    pods: dict[str, Json] = attrs.field(factory=dict)
    host: PodHost | None = None
    """When set, a created pod boots for real: its bootstrap runs and its sshd answers."""
    create_status: str = "RUNNING"
    """The status a created pod shows (`EXITED`: one that never becomes ready)."""
    faults: list[Fault] = attrs.field(factory=list)
    requests: list[Request] = attrs.field(factory=list)
    violations: list[str] = attrs.field(factory=list)
    url: str = ""
    logs: dict[str, list[Json]] = attrs.field(factory=dict)
    """Each pod's log lines as Runpod streams them: `{ts, source, line}`, `ts` unique: lines
    added by `log`, and a booted pod's own output (its container log) as it prints it."""
    _console_read: dict[str, int] = attrs.field(factory=dict)
    _next_id: int = 0
    _log_clock: int = 0

    def log(self, pod_id: str, source: str, line: str) -> None:
        """Add a line to a pod's log (its `ts` and event ID: a fake clock's microseconds)."""
        self._log_clock += 1
        ts = f"2026-06-01T12:00:00.{self._log_clock:06d}Z"
        self.logs.setdefault(pod_id, []).append({"ts": ts, "source": source, "line": line})

    def _logs(self, pod_id: str, request: Request, query: dict[str, str]) -> Response:
        """`GET /pods/{id}/logs`: the lines after the cursor, or the last `tail`, as SSE."""
        if pod_id not in self.pods:
            return problem(404, "Not Found", f"pod {pod_id} not found")
        self._read_console(pod_id)
        lines = list(self.logs.get(pod_id, []))
        source = query.get("source")
        if source is not None:
            lines = [line for line in lines if line["source"] == source]
        cursor = request.headers.get("last-event-id") or query.get("since")
        if cursor:
            lines = [line for line in lines if line["ts"] > cursor]
        else:
            tail = int(query.get("tail", "100"))
            lines = lines[len(lines) - tail :] if tail else []
        body = "".join(f"id: {line['ts']}\ndata: {json.dumps(line)}\n\n" for line in lines).encode()
        # Runpod holds the stream open with keepalive comments; the fake ends it at once.
        body = body or b": keepalive\n\n"
        headers = (("content-type", "text/event-stream"), ("cache-control", "no-cache"))
        return Response(200, body, headers)

    def _read_console(self, pod_id: str) -> None:
        """The booted pod's output since the last read, as `container` lines of its log."""
        if self.host is None:
            return
        printed = self.host.console(pod_id)
        done = self._console_read.get(pod_id, 0)
        for line in printed[done:]:
            self.log(pod_id, "container", line)
        self._console_read[pod_id] = len(printed)

    def fail(self, *faults: Fault) -> None:
        """Script faults, answered in order to the requests they match."""
        self.faults.extend(faults)

    def asked(self, method: str, path: str) -> list[Request]:
        """The requests received with this method and path (query excluded)."""
        return [r for r in self.requests if r.method == method and r.path == "/v2/" + path]

    async def handle(self, request: Request) -> Response:
        """Check the request, answer it, check the answer."""
        self.requests.append(request)
        wrong = check_request(request)
        if wrong is not None:
            self.violations.append(wrong)
            return problem(400, "Bad Request", "request does not match the API description")
        response = await self._answer(request)
        wrong = check_response(request, response)
        if wrong is not None:
            self.violations.append(wrong)
        return response

    async def _answer(self, request: Request) -> Response:
        for fault in self.faults:
            if fault.matches(request):
                self.faults.remove(fault)
                if not fault.create:
                    return await self._fault(fault)
                routed = self._route(request)
                if fault.status is None and fault.body is None and not fault.drop:
                    await trio.sleep(fault.delay)  # a slow answer to a request that was done
                    if fault.held is not None:
                        await fault.held.wait()
                    return routed
                return await self._fault(fault)
        if request.headers.get("authorization") != f"Bearer {self.key}":
            return problem(401, "Unauthorized", "invalid bearer token")
        return self._route(request)

    async def _fault(self, fault: Fault) -> Response:
        if fault.delay:
            await trio.sleep(fault.delay)
        if fault.held is not None:
            await fault.held.wait()
        if fault.drop:
            return Response(drop=True)
        if fault.body is not None:
            status = fault.status or 200
            return Response(status, fault.body, (("content-type", fault.content_type),))
        status = fault.status or 500
        headers = {"retry-after": fault.retry_after} if fault.retry_after is not None else {}
        titles = {401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests"}
        return problem(status, titles.get(status, "Error"), fault.detail, headers)

    def _route(self, request: Request) -> Response:
        path = request.path.removeprefix("/v2/")
        query = dict(urllib.parse.parse_qsl(request.query))
        method = request.method
        if (method, path) == ("GET", "catalog/gpus"):
            return ok({"gpus": self.gpus})
        if (method, path) == ("GET", "catalog/datacenters"):
            return ok({"dataCenters": self.data_centers})
        if (method, path) == ("GET", "network-volumes"):
            return ok({"networkVolumes": self.volumes})
        if (method, path) == ("GET", "templates"):
            return ok({"templates": self.templates})
        if (method, path) == ("GET", "pods"):
            return ok({"pods": list(self.pods.values())})
        if (method, path) == ("POST", "pods"):
            return self._create(json.loads(request.body))
        if method == "GET" and path.startswith("pods/") and path.endswith("/logs"):
            return self._logs(path[5:-5], request, query)
        if path.startswith("pods/") and "/" not in path[5:]:
            pod_id = path[5:]
            if pod_id not in self.pods:
                return problem(404, "Not Found", "pod not found")
            if method == "GET":
                return ok(self.pods[pod_id])
            if method == "DELETE":
                self._remove(pod_id)
                return Response(204)
        if method == "POST" and path.startswith("pods/") and path.endswith("/action"):
            return self._action(path[5:-7], json.loads(request.body)["action"])
        if path.startswith("network-volumes/"):
            found = [v for v in self.volumes if v["id"] == path.split("/", 1)[1]]
            if not found:
                return problem(404, "Not Found", "network volume not found")
            if method == "PATCH":
                found[0]["size"] = json.loads(request.body)["size"]
            return ok(found[0])
        return problem(404, "Not Found", "no such route in the fake")

    def _action(self, pod_id: str, action: str) -> Response:
        """`POST /pods/{id}/action`: terminate deletes, stop leaves an EXITED pod at no cost."""
        if pod_id not in self.pods:
            return problem(404, "Not Found", "pod not found")
        if action == "terminate":
            self._remove(pod_id)
            return Response(204)
        pod = self.pods[pod_id]
        pod["status"] = "EXITED" if action == "stop" else "RUNNING"
        pod["cost"] = 0 if action == "stop" else 0.44
        return ok(pod)

    def _create(self, body: Json) -> Response:
        self._next_id += 1
        pod_id = f"pod{self._next_id:04d}"
        env = body.get("env", {})
        pod = pod_json(pod_id, body["name"], body["gpu"]["id"], env, self.create_status)
        pod["args"] = body.get("args", "")
        if self.host is not None:
            pod["ssh"]["direct"] = self.host.place(pod_id, body, self.key)
        self.pods[pod_id] = pod
        self.log(pod_id, "system", f"create pod {pod_id}: pulling {body['image']}")
        self.log(pod_id, "container", "starting the container")
        return ok(pod, 201)

    def vanish(self, pod_id: str) -> None:
        """The pod disappears as if deleted from elsewhere (the console, its watchdog)."""
        self._remove(pod_id)

    def _remove(self, pod_id: str) -> None:
        del self.pods[pod_id]
        if self.host is not None:
            self.host.remove(pod_id)

    async def serve(self, *, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve on 127.0.0.1 until cancelled; reports the base URL (`…/v2`) once bound."""
        openapi()
        async with trio.open_nursery() as nursery:
            host, port = await nursery.start(serve_http, self.handle, "127.0.0.1", 0)
            self.url = f"http://{host}:{port}/v2"
            task_status.started(self.url)


@contextlib.asynccontextmanager
async def open_fake(fake: RunpodFake | None = None) -> AsyncIterator[RunpodFake]:
    """A fake serving on a free loopback port for the block; a block that ends normally with a
    violation left (one a test did not expect and clear) fails."""
    served = fake or RunpodFake()
    async with trio.open_nursery() as nursery:
        await nursery.start(served.serve)
        try:
            yield served
        finally:
            nursery.cancel_scope.cancel()
    assert served.violations == [], served.violations
