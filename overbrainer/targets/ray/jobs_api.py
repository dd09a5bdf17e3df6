"""A Ray cluster's Jobs API over HTTP (the dashboard's `/api/jobs/` and `/api/packages/`).

Every request is bounded (a frozen head answers nothing: the connection opens and no byte
comes), and every failure is one line: Ray answers refusals with a Python traceback as text,
of which the last line says what went wrong. We only ever use the dashboard URL we were given,
never an address an answer hands back (a node advertises addresses the client may not reach).
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import io
import json
import re
import zipfile
from collections.abc import AsyncIterator, Mapping

import attrs
import httpx2
import trio

from overbrainer import __version__
from overbrainer.llm import address_of, join_url, transport_cause
from overbrainer.model import redact
from overbrainer.targets.ray.errors import RayError, RayJobMissing, RayRefused, RayUnanswered

MAX_BODY = 64 * 1024 * 1024
"""The largest answer read (a job's whole log comes back in one answer)."""
CONNECT_SECS = 10.0


class JobState(enum.Enum):
    """A Ray job's status (`ray.job_submission.JobStatus`)."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    STOPPED = "STOPPED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"

    @property
    def ended(self) -> bool:
        """Whether the job is over (it will not change again)."""
        return self in (JobState.STOPPED, JobState.SUCCEEDED, JobState.FAILED)


@attrs.frozen
class JobInfo:
    """What the cluster says of one job."""

    submission_id: str
    state: JobState
    message: str
    exit_code: int | None
    """The entrypoint's exit code (None while it runs, and for a stopped job)."""
    metadata: dict[str, str]


@attrs.frozen
class Submission:
    """A job to submit: its command, our ID for it, and where and with what it runs."""

    entrypoint: str
    submission_id: str
    runtime_env: dict[str, object]
    metadata: dict[str, str] = attrs.field(factory=dict)
    entrypoint_num_cpus: float = 0.0
    """The driver needs no CPU of its own: Ray Train's workers ask for theirs."""

    def body(self) -> dict[str, object]:
        """The `POST /api/jobs/` body."""
        return {
            "entrypoint": self.entrypoint,
            "submission_id": self.submission_id,
            "runtime_env": self.runtime_env,
            "metadata": self.metadata,
            "entrypoint_num_cpus": self.entrypoint_num_cpus,
        }


@attrs.frozen
class Package:
    """A working_dir package: its name in the cluster's store and its zip bytes."""

    name: str
    data: bytes

    @property
    def uri(self) -> str:
        """The runtime env's `working_dir` value."""
        return f"gcs://{self.name}"


def package(files: Mapping[str, bytes], salt: str) -> Package:
    """A zip of `files` named after its content and `salt` (the run's ID): a package per run,
    as Ray's SDK does, so a node that rejoins never meets a package deleted under another job."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            # A fixed time, so that the same files make the same bytes.
            archive.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), files[name])
    data = buffer.getvalue()
    digest = hashlib.sha1(data + salt.encode()).hexdigest()[:16]
    return Package(name=f"_ray_pkg_{digest}.zip", data=data)


EXCEPTION_LINE = re.compile(r"(?:[\w.]+\.)?\w*(?:Error|Exception|Exit|Interrupt)\b.*")
"""A traceback's exception line (`ValueError: Job with submission_id … already exists`)."""


def last_line(text: str) -> str:
    """What an error body says in one line: a traceback's last exception line, else its last
    non-blank line; shortened."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    raised = [line for line in lines if EXCEPTION_LINE.fullmatch(line)]
    line = raised[-1] if raised else lines[-1] if lines else "(no text)"
    return line if len(line) <= 300 else line[:297] + "..."


class JobsApi:
    """One pooled connection to a cluster's dashboard; each call bounded by `request_secs`."""

    def __init__(self, client: httpx2.AsyncClient, address: str, request_secs: float) -> None:
        self._client = client
        self.address = address.rstrip("/")
        self.where = address_of(address)
        self.request_secs = request_secs

    def __repr__(self) -> str:
        return f"JobsApi(address={self.where!r})"

    async def _call(
        self,
        method: str,
        path: str,
        *,
        body: object = None,
        content: bytes | None = None,
        job: str | None = None,
    ) -> httpx2.Response:
        """One request, answered in time with a 2xx; else a one-line `RayError`."""
        if body is not None:
            content = json.dumps(body, separators=(",", ":")).encode()
        headers = {"content-type": "application/json"} if body is not None else {}
        url = join_url(self.address, path)
        response: httpx2.Response | None = None
        with trio.move_on_after(self.request_secs):
            try:
                response = await self._client.request(method, url, content=content, headers=headers)
            except httpx2.HTTPError as error:
                cause = transport_cause(error)
                raise RayUnanswered(f"the Ray cluster at {self.where}: {cause}") from None
        if response is None:
            raise RayUnanswered(
                f"the Ray cluster at {self.where} did not answer within {self.request_secs:g}s"
            )
        if len(response.content) > MAX_BODY:
            raise RayError(f"the Ray cluster at {self.where} answered more than 64 MiB")
        status = response.status_code
        if status < 300:
            return response
        said = redact.redact(last_line(response.text))
        if status in (401, 403):
            raise RayRefused(
                f"the Ray cluster at {self.where} refused our credentials (HTTP {status}: "
                f"{said}): check the target's token_env and headers",
                status,
            )
        if status == 404 and job is not None:
            raise RayJobMissing(f"the Ray cluster has no job `{job}`", status)
        raise RayError(f"Ray {method} {path}: HTTP {status}: {said}", status)

    async def _json(
        self, method: str, path: str, *, body: object = None, job: str | None = None
    ) -> object:
        """A call whose answer is JSON; a body that is not is a one-line `RayError`."""
        response = await self._call(method, path, body=body, job=job)
        try:
            decoded: object = response.json()
        except ValueError:
            said = last_line(response.text)
            raise RayError(f"Ray {method} {path}: the answer is not JSON: {said}") from None
        return decoded

    async def version(self) -> str:
        """The cluster's Ray version (`GET /api/version`): is the head there, do we get in."""
        body = await self._json("GET", "/api/version")
        if not isinstance(body, dict) or not isinstance(body.get("ray_version"), str):
            raise RayError(f"the Ray cluster at {self.where}: /api/version is not Ray's")
        version: str = body["ray_version"]
        return version

    async def upload(self, pkg: Package) -> str:
        """Put `pkg` in the cluster's package store unless it is there; its `gcs://` URI.

        The GET first, as Ray's SDK does: it also pins a package already there for a while.
        """
        path = f"/api/packages/gcs/{pkg.name}"
        try:
            await self._call("GET", path)
        except RayError as error:
            if error.status != 404:
                raise
            await self._call("PUT", path, content=pkg.data)
        return pkg.uri

    async def submit(self, submission: Submission) -> str:
        """Submit a job under our own ID; the ID (a second submit with it is refused)."""
        body = await self._json("POST", "/api/jobs/", body=submission.body())
        if not isinstance(body, dict) or body.get("submission_id") != submission.submission_id:
            raise RayError(f"Ray POST /api/jobs/: an unexpected answer {body!r:.200}")
        return submission.submission_id

    async def status(self, submission_id: str) -> JobInfo:
        """The job's state (`GET /api/jobs/{id}`); `RayJobMissing` when the cluster has none."""
        path = f"/api/jobs/{submission_id}"
        body = await self._json("GET", path, job=submission_id)
        try:
            assert isinstance(body, dict)
            code = body.get("driver_exit_code")
            return JobInfo(
                submission_id=str(body.get("submission_id") or submission_id),
                state=JobState(body["status"]),
                message=str(body.get("message") or ""),
                exit_code=code if isinstance(code, int) else None,
                metadata={str(k): str(v) for k, v in (body.get("metadata") or {}).items()},
            )
        except (AssertionError, KeyError, ValueError, AttributeError):
            raise RayError(f"Ray GET {path}: not a job's details: {body!r:.200}") from None

    async def logs(self, submission_id: str) -> str:
        """The job's whole driver log so far (`GET /api/jobs/{id}/logs`)."""
        path = f"/api/jobs/{submission_id}/logs"
        body = await self._json("GET", path, job=submission_id)
        if not isinstance(body, dict) or not isinstance(body.get("logs"), str):
            raise RayError(f"Ray GET {path}: no logs in the answer")
        logs: str = body["logs"]
        return logs

    async def stop(self, submission_id: str) -> bool:
        """Ask the job to stop (SIGTERM, then SIGKILL after Ray's grace); False: it had ended."""
        path = f"/api/jobs/{submission_id}/stop"
        body = await self._json("POST", path, job=submission_id)
        return isinstance(body, dict) and body.get("stopped") is True

    async def delete(self, submission_id: str) -> bool:
        """Forget an ended job (its details and log); a running one is refused (RayError)."""
        path = f"/api/jobs/{submission_id}"
        body = await self._json("DELETE", path, job=submission_id)
        return isinstance(body, dict) and body.get("deleted") is True


def auth_headers(
    token: str | None, headers: Mapping[str, str], secret_headers: Mapping[str, str]
) -> dict[str, str]:
    """Every request's headers: ours, the proxy's, and the token (its secrets registered so
    that no error or log ever shows them)."""
    sent = {"user-agent": f"overbrainer/{__version__}", **headers}
    for value in secret_headers.values():
        redact.register(value)
    sent.update(secret_headers)
    if token:
        redact.register(token)
        sent["authorization"] = f"Bearer {token}"
    return sent


@contextlib.asynccontextmanager
async def open_jobs_api(
    address: str,
    headers: Mapping[str, str],
    request_secs: float,
) -> AsyncIterator[JobsApi]:
    """A client of the cluster's Jobs API at `address`, closed on leaving."""
    timeout = httpx2.Timeout(request_secs, connect=min(CONNECT_SECS, request_secs))
    async with httpx2.AsyncClient(headers=dict(headers), timeout=timeout) as client:
        yield JobsApi(client, address, request_secs)
