"""The Runpod client against the loopback fake: retries, timeouts, errors, paging, gone rule."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest
import trio

from overbrainer.llm.retry import RetryPolicy
from overbrainer.model.errors import EXIT_USAGE
from overbrainer.targets.runpod.api import open_runpod
from overbrainer.targets.runpod.errors import CreateError, CreateFailure, RunpodError
from overbrainer.targets.runpod.http import Timeouts, mask_key
from overbrainer.targets.runpod.types import RemoteStatus
from tests.runpod_fake import KEY, Fault, RunpodFake, open_fake, pod_json, template

FAST = RetryPolicy(max_retries=5, base=0.01, cap=0.05)
CREATE_BODY: dict[str, object] = {
    "name": "overbrainer-r1-1",
    "image": "axolotlai/axolotl-cloud-term:test",
    "cloud": "SECURE",
    "gpu": {"id": "NVIDIA A40", "count": 1, "minCudaVersion": "13.0"},
    "disk": 50,
    "ports": ["22/tcp"],
    "startSsh": False,
    "env": {"OVERBRAINER_RUN_ID": "r1"},
    "args": "bash -c 'echo hi'",
}


@pytest.fixture
async def fake() -> AsyncIterator[RunpodFake]:
    with trio.fail_after(30):
        async with open_fake() as served:
            yield served
    assert served.violations == []


class Waits:
    """The waits the client chose before each retry."""

    def __init__(self) -> None:
        self.seen: list[float] = []

    def __call__(self, number: int, error: Exception, wait: float) -> None:
        self.seen.append(wait)


async def test_catalog_request_carries_key_agent_and_query(fake: RunpodFake) -> None:
    async with open_runpod(fake.url, KEY, policy=FAST) as api:
        gpus = await api.gpu_types(2)
    assert [g.id for g in gpus][:2] == ["NVIDIA GeForce RTX 4090", "NVIDIA A40"]
    (request,) = fake.asked("GET", "catalog/gpus")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["user-agent"].startswith("overbrainer/")
    assert request.query == (
        "include=AVAILABILITY&product=POD&cloud=SECURE&count=2&minCudaVersion=13.0"
    )


async def test_get_retries_429_honouring_retry_after_then_5xx(fake: RunpodFake) -> None:
    fake.fail(
        Fault("GET", "catalog/gpus", status=429, retry_after="0"),
        Fault("GET", "catalog/gpus", status=503),
        Fault("GET", "catalog/gpus", status=408),
    )
    waits = Waits()
    async with open_runpod(fake.url, KEY, policy=FAST, on_retry=waits) as api:
        assert len(await api.gpu_types()) == 5
    assert len(fake.asked("GET", "catalog/gpus")) == 4
    assert waits.seen[0] == 0.0  # the server's Retry-After, not the backoff
    assert all(0 < wait <= 0.05 for wait in waits.seen[1:])


async def test_retry_after_seconds_are_the_wait(fake: RunpodFake) -> None:
    fake.fail(Fault("GET", "network-volumes", status=429, retry_after="1"))
    waits = Waits()
    async with open_runpod(fake.url, KEY, policy=FAST, on_retry=waits) as api:
        await api.network_volumes()
    assert waits.seen == [1.0]


async def test_get_gives_up_after_five_retries(fake: RunpodFake) -> None:
    fake.fail(*[Fault("GET", "network-volumes", status=502) for _ in range(6)])
    async with open_runpod(fake.url, KEY, policy=FAST) as api:
        with pytest.raises(RunpodError) as caught:
            await api.network_volumes()
    assert len(fake.asked("GET", "network-volumes")) == 6
    assert caught.value.message == (
        "Runpod answered GET network-volumes with HTTP 502: scripted fault"
    )


async def test_dropped_connection_is_retried(fake: RunpodFake) -> None:
    fake.fail(Fault("GET", "catalog/datacenters", drop=True))
    async with open_runpod(fake.url, KEY, policy=FAST) as api:
        assert [dc.id for dc in await api.data_centers()] == ["US-KS-2", "EU-RO-1"]
    assert len(fake.asked("GET", "catalog/datacenters")) == 2


async def test_request_timeout_then_retry(fake: RunpodFake) -> None:
    fake.fail(Fault("GET", "network-volumes", delay=5))
    timeouts = Timeouts(connect=1, request=0.3, create=0.3)
    async with open_runpod(fake.url, KEY, policy=FAST, timeouts=timeouts) as api:
        assert await api.network_volumes() == []
    assert len(fake.asked("GET", "network-volumes")) == 2


async def test_unanswered_get_names_the_cause(fake: RunpodFake) -> None:
    fake.fail(*[Fault("GET", "network-volumes", delay=5) for _ in range(3)])
    timeouts = Timeouts(connect=1, request=0.2, create=0.2)
    policy = RetryPolicy(max_retries=2, base=0.01, cap=0.01)
    async with open_runpod(fake.url, KEY, policy=policy, timeouts=timeouts) as api:
        with pytest.raises(RunpodError) as caught:
            await api.network_volumes()
    assert caught.value.message.startswith("Runpod did not answer GET network-volumes (127.0.0.1:")
    assert caught.value.message.endswith("): no answer within 0.2s")


async def test_401_is_the_fixed_key_message_and_not_retried(fake: RunpodFake) -> None:
    async with open_runpod(fake.url, "rpa_WRONGKEY_0123456789abcdef", policy=FAST) as api:
        with pytest.raises(RunpodError) as caught:
            await api.templates()
    assert caught.value.message == "Runpod refused the API key"
    assert caught.value.exit_code == EXIT_USAGE
    assert len(fake.asked("GET", "templates")) == 1


async def test_error_text_never_shows_part_of_the_key(fake: RunpodFake) -> None:
    echoed = f"bad header Bearer {KEY[3:19]}… seen"
    fake.fail(Fault("GET", "network-volumes", status=403, detail=echoed))
    async with open_runpod(fake.url, KEY, policy=FAST) as api:
        with pytest.raises(RunpodError) as caught:
            await api.network_volumes()
    assert KEY[3:19] not in caught.value.message
    assert caught.value.message == (
        "Runpod answered GET network-volumes with HTTP 403: bad header Bearer ***… seen"
    )


def test_mask_key_masks_every_16_character_window() -> None:
    key = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    assert mask_key("x GHIJKLMNOPQRSTUV y", key) == "x *** y"
    assert mask_key("x GHIJKLMNOPQRSTU y", key) == "x GHIJKLMNOPQRSTU y"


@pytest.mark.parametrize(
    ("status", "detail", "failure", "message"),
    [
        (
            400,
            "There are no longer any instances available with the requested specifications.",
            CreateFailure.UNAVAILABLE,
            "no capacity for this GPU type",
        ),
        (401, "no", CreateFailure.KEY_REFUSED, "Runpod refused the API key"),
        (402, "no", CreateFailure.NO_CREDITS, "the Runpod account balance is insufficient"),
        (
            403,
            "no",
            CreateFailure.FORBIDDEN,
            "Runpod refused the request (403): check the API key and that the GPU type is allowed",
        ),
        (
            408,
            "no",
            CreateFailure.AMBIGUOUS,
            "Runpod timed out on the create request (the pod may have been created anyway)",
        ),
        (
            422,
            "bad",
            CreateFailure.REJECTED,
            "Runpod rejected the create request "
            "(please report it: overbrainer built an invalid request)",
        ),
        (400, "bad", CreateFailure.REFUSED, "Runpod refused it with HTTP 400: bad"),
        (500, "oops", CreateFailure.AMBIGUOUS, "Runpod failed to process the create request"),
    ],
)
async def test_create_errors_are_fixed_by_status_and_not_retried(
    fake: RunpodFake, status: int, detail: str, failure: CreateFailure, message: str | None
) -> None:
    fake.fail(Fault("POST", "pods", status=status, detail=detail))
    async with open_runpod(fake.url, KEY, policy=FAST) as api:
        with pytest.raises(CreateError) as caught:
            await api.create_pod(CREATE_BODY)
    assert caught.value.failure is failure
    if message is not None:
        assert caught.value.message == message
    assert len(fake.asked("POST", "pods")) == 1
    assert fake.pods == {}


async def test_create_is_retried_on_429_only(fake: RunpodFake) -> None:
    fake.fail(Fault("POST", "pods", status=429, retry_after="0"))
    async with open_runpod(fake.url, KEY, policy=FAST) as api:
        pod = await api.create_pod(CREATE_BODY)
    assert len(fake.asked("POST", "pods")) == 2
    assert pod.run_id == "r1"
    assert pod.status is RemoteStatus.RUNNING
    assert pod.ssh is not None and pod.ssh.port == 2222


async def test_create_timeout_is_ambiguous_and_not_retried(fake: RunpodFake) -> None:
    fake.fail(Fault("POST", "pods", delay=5))
    timeouts = Timeouts(connect=1, request=5, create=0.3)
    async with open_runpod(fake.url, KEY, policy=FAST, timeouts=timeouts) as api:
        with pytest.raises(CreateError) as caught:
            await api.create_pod(CREATE_BODY)
    assert caught.value.failure is CreateFailure.AMBIGUOUS
    assert len(fake.asked("POST", "pods")) == 1


async def test_unreadable_created_body_is_ambiguous(fake: RunpodFake) -> None:
    fake.fail(Fault("POST", "pods", status=201, body=b"{not json", content_type="application/json"))
    async with open_runpod(fake.url, KEY, policy=FAST) as api:
        with pytest.raises(CreateError) as caught:
            await api.create_pod(CREATE_BODY)
    assert caught.value.failure is CreateFailure.AMBIGUOUS
    fake.violations.clear()  # the scripted body is deliberately off the description


async def test_pods_are_listed_in_one_call_without_a_query(fake: RunpodFake) -> None:
    for number in range(5):
        pod_id = f"pod{number}"
        fake.pods[pod_id] = pod_json(pod_id, f"p{number}", "NVIDIA A40", {}, "RUNNING")
    async with open_runpod(fake.url, KEY, policy=FAST) as api:
        pods = await api.list_pods()
    assert [p.id for p in pods] == ["pod0", "pod1", "pod2", "pod3", "pod4"]
    # The description declares no paging parameter for `GET /pods`: none is sent.
    assert [r.query for r in fake.asked("GET", "pods")] == [""]


async def test_an_answer_naming_a_next_page_is_read_once_and_warned(
    fake: RunpodFake, caplog: pytest.LogCaptureFixture
) -> None:
    paged = b'{"templates": [], "nextCursor": "c1"}'
    fake.fail(Fault("GET", "templates", status=200, body=paged, content_type="application/json"))
    async with open_runpod(fake.url, KEY, policy=FAST) as api:
        assert await api.templates() == []
    assert len(fake.asked("GET", "templates")) == 1
    assert "names a next page; only its first page was read" in caplog.text


async def test_an_undeclared_query_parameter_is_a_violation(fake: RunpodFake) -> None:
    async with open_runpod(fake.url, KEY, policy=FAST) as api:
        await api.http.call("GET", "pods", params={"limit": "1000"})
    assert len(fake.violations) == 1
    assert "undeclared query parameters ['limit']" in fake.violations[0]
    fake.violations.clear()  # the request is deliberately off the description


async def test_templates_drop_serverless_and_keep_first_of_an_id(fake: RunpodFake) -> None:
    fake.templates = [
        template("t1", "first", "img:1"),
        template("s1", "worker", "img:2", serverless=True),
        template("t1", "again", "img:3"),
    ]
    async with open_runpod(fake.url, KEY, policy=FAST) as api:
        found = await api.templates()
    assert [(t.id, t.name) for t in found] == [("t1", "first")]
    assert fake.asked("GET", "templates")[0].query == ""


async def test_a_404_is_gone_only_in_runpod_shape(fake: RunpodFake) -> None:
    async with open_runpod(fake.url, KEY, policy=FAST) as api:
        assert await api.get_pod("nosuch") is None
        assert await api.delete_pod("nosuch") is False
        fake.fail(
            Fault("GET", "pods/x1", status=404, body=b"<html>404</html>", content_type="text/html")
        )
        with pytest.raises(RunpodError, match="HTTP 404"):
            await api.get_pod("x1")
    fake.violations.clear()  # the HTML 404 is what a proxy in the way would send


async def test_pod_gone_needs_three_404s_and_absence_from_the_list(fake: RunpodFake) -> None:
    fake.pods["pod1"] = pod_json("pod1", "p", "NVIDIA A40", {}, "RUNNING")
    async with open_runpod(fake.url, KEY, policy=FAST) as api:
        assert await api.pod_gone("pod1", interval=0.01) is False
        assert await api.delete_pod("pod1") is True
        assert await api.pod_gone("pod1", interval=0.01) is True
    assert len(fake.asked("GET", "pods/pod1")) == 1 + 3
    assert len(fake.asked("GET", "pods")) == 1


async def test_volume_resize_is_retried_at_most_once(fake: RunpodFake) -> None:
    fake.volumes = [
        {"id": "vol1", "name": "v", "size": 100, "dataCenter": "EU-RO-1", "type": "STANDARD"}
    ]
    fake.fail(Fault("PATCH", "network-volumes", status=503))
    async with open_runpod(fake.url, KEY, policy=FAST) as api:
        assert (await api.resize_volume("vol1", 150)).size_gb == 150
        fake.fail(*[Fault("PATCH", "network-volumes", status=503) for _ in range(3)])
        with pytest.raises(RunpodError, match="HTTP 503"):
            await api.resize_volume("vol1", 200)
    assert len(fake.asked("PATCH", "network-volumes/vol1")) == 2 + 2


async def test_a_wrong_request_fails_the_openapi_check(fake: RunpodFake) -> None:
    async with httpx2.AsyncClient() as client:
        bad = await client.get(
            f"{fake.url}/catalog/gpus?include=BOGUS",
            headers={"authorization": f"Bearer {KEY}"},
        )
        no_key = await client.get(f"{fake.url}/network-volumes")
    assert bad.status_code == 400 and no_key.status_code == 400
    assert len(fake.violations) == 2
    assert "include" in fake.violations[0]
    fake.violations.clear()


async def test_a_create_body_with_a_wrong_field_fails_the_check(fake: RunpodFake) -> None:
    wrong = {**CREATE_BODY, "gpu": {"id": "NVIDIA A40", "count": 0}}
    async with open_runpod(fake.url, KEY, policy=FAST) as api:
        with pytest.raises(CreateError):
            await api.create_pod(wrong)
    assert len(fake.violations) == 1
    fake.violations.clear()


async def test_the_create_body_passes_the_unmodified_description(fake: RunpodFake) -> None:
    async with open_runpod(fake.url, KEY, policy=FAST) as api:
        await api.create_pod(CREATE_BODY)
    assert fake.violations == []


@pytest.mark.parametrize(
    "change",
    [
        {"cmd": ["bash", "-c", "echo hi"]},
        {"args": ["bash", "-c", "echo hi"]},
        {"dockerStartCmd": ["bash", "-c", "echo hi"]},
        {"secrets": {"k": "v"}},
    ],
    ids=["the-references-cmd", "args-as-an-array", "an-unknown-field", "another-unknown-field"],
)
async def test_a_create_body_off_the_description_is_a_violation(
    fake: RunpodFake, change: dict[str, object]
) -> None:
    body = {k: v for k, v in CREATE_BODY.items() if k != "args"} | change
    async with open_runpod(fake.url, KEY, policy=FAST) as api:
        with pytest.raises(CreateError):
            await api.create_pod(body)
    (violation,) = fake.violations
    assert "POST /v2/pods" in violation
    assert fake.pods == {}
    fake.violations.clear()


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "account/secrets?name=x"),
        ("POST", "account/secrets"),
        ("DELETE", "account/secrets/sec1"),
        ("PUT", "pods/pod1"),
        ("GET", "pods/pod1/secrets"),
    ],
)
async def test_a_call_the_description_does_not_have_is_a_violation(
    fake: RunpodFake, method: str, path: str
) -> None:
    body = b'{"name": "x", "value": "v"}' if method == "POST" else None
    async with httpx2.AsyncClient() as client:
        answer = await client.request(
            method,
            f"{fake.url}/{path}",
            content=body,
            headers={"authorization": f"Bearer {KEY}", "content-type": "application/json"},
        )
    assert answer.status_code == 400
    (violation,) = fake.violations
    assert f"{method} /v2/{path}" in violation
    fake.violations.clear()


async def test_an_answer_over_8_mib_is_refused_not_retried(fake: RunpodFake) -> None:
    huge = b'{"networkVolumes": [], "pad": "' + b"x" * (8 * 1024 * 1024) + b'"}'
    fake.fail(Fault("GET", "network-volumes", status=200, body=huge, content_type="text/plain"))
    async with open_runpod(fake.url, KEY, policy=FAST) as api:
        with pytest.raises(RunpodError) as caught:
            await api.network_volumes()
    assert caught.value.message.endswith("the answer is larger than 8 MiB")
    assert len(fake.asked("GET", "network-volumes")) == 1
    fake.violations.clear()  # the scripted body is deliberately off the description
