"""Which GPU type a Runpod `train` gets: the next `gpu_types` entry when one has no capacity,
and `gpu_types = "auto"` with its VRAM floor and its re-read of Runpod's catalog."""

from __future__ import annotations

import json
import subprocess

import trio

from overbrainer.net.http_server import Request, Response, serve_http
from overbrainer.targets.runpod.types import RUN_MARKER
from tests import runpod_train_support as pods
from tests.ports import free_port
from tests.runpod_fake import Fault, gpu, pod_json
from tests.runpod_train_support import (
    A40,
    RTX,
    Setup,
    creates,
    messages,
    pod_lines,
    pod_record,
    train,
)
from tests.train_helpers import only_run

pytestmark = pods.needs_pod_tools
setup = pods.setup  # the fixture: a project on a Runpod target, the fake, its pod host


CAPACITY = "There are no longer any instances available with the requested specifications."


async def test_capacity_on_the_first_type_then_the_second(setup: Setup) -> None:
    # A pod of a run this project does not have: warned about, never deleted by `train`.
    stray = pod_json(
        "stray01",
        "overbrainer-gone_20260101-000000-1",
        A40,
        {RUN_MARKER: "gone_20260101-000000"},
        "RUNNING",
    )
    setup.fake.pods["stray01"] = stray
    setup.fake.fail(Fault("POST", "pods", status=400, detail=CAPACITY))
    done = await train(setup)
    err = done.stderr.decode()
    assert done.returncode == 0, err
    run_id = only_run(setup.project)
    assert creates(setup.fake) == [A40, RTX]
    assert any(
        line.startswith("pod stray01 is still on Runpod at $0.44/h: not in this project's runs/")
        for line in messages(err)
    ), err
    lines = pod_lines(err)
    assert lines[:3] == [
        f"pod: creating overbrainer-{run_id}-1 ({A40})",
        f"pod: {A40} unavailable (no capacity for this GPU type)",
        f"pod: creating overbrainer-{run_id}-2 ({RTX})",
    ]
    pod = pod_record(setup.project, run_id)
    results = [a["result"] for a in pod["attempts"]]
    assert results == ["unavailable", "created"]
    assert pod["gpu_type"] == RTX
    assert list(setup.fake.pods) == ["stray01"]


# A model of 40e9 parameters (qlora: about 24 GB of weights) with Qwen3-4B's layout: its floor
# is above the 24 GB of an RTX 4090, below the 48 GB of an A40.
BIG_INFO = {"safetensors": {"total": 40_000_000_000}}


BIG_CONFIG = {"hidden_size": 2560, "num_hidden_layers": 36, "vocab_size": 151936}


H100 = "NVIDIA H100 80GB HBM3"


L40S = "NVIDIA L40S"


A6000 = "NVIDIA RTX A6000"


async def test_auto_gpu_types_use_the_vram_floor_and_reread_the_catalog(
    setup: Setup, nursery: trio.Nursery
) -> None:
    asked: list[str] = []

    async def hub(request: Request) -> Response:
        asked.append(request.path)
        body = BIG_INFO if request.path.startswith("/api/models/") else BIG_CONFIG
        return Response(200, json.dumps(body).encode(), (("content-type", "application/json"),))

    host, port = await nursery.start(serve_http, hub, "127.0.0.1", 0)
    trained: list[subprocess.CompletedProcess[bytes]] = []

    async def run_train() -> None:
        trained.append(await train(setup))

    setup.env["OVERBRAINER_HUB__BASE_URL"] = f"http://{host}:{port}"
    config = setup.project / "overbrainer.toml"
    config.write_text(
        config.read_text().replace(f'gpu_types = ["{A40}", "{RTX}"]', 'gpu_types = "auto"')
    )
    # The A40 has no capacity (answered once the test releases it); meanwhile the catalog
    # changes: the H100 is out of stock, the A6000 gone, and a new type in stock. The re-read
    # after the A40 tries that one.
    answer = trio.Event()
    setup.fake.fail(Fault("POST", "pods", status=400, detail=CAPACITY, held=answer, exact=True))
    async with trio.open_nursery() as inner:
        inner.start_soon(run_train)
        with trio.fail_after(60):
            while not setup.fake.asked("POST", "pods"):  # noqa: ASYNC110 - the fake's state
                await trio.sleep(0.02)
        setup.fake.gpus = [
            *(g for g in setup.fake.gpus if g["id"] not in (H100, A6000)),
            gpu(H100, 80, 2.69, availability="NONE", data_centers=()),
            gpu(L40S, 48, 0.79),
        ]
        answer.set()
    done = trained[0]
    err = done.stderr.decode()
    assert done.returncode == 0, err
    said = messages(err)
    estimate = [line for line in said if line.startswith("the run needs about ")]
    assert len(estimate) == 1, err
    floor = int(estimate[0].rsplit("at least ", 1)[1].split(" ")[0])
    assert 24 < floor <= 48, estimate
    picks = [line for line in said if line.startswith('gpu_types = "auto" picked ')]
    assert picks[0].startswith(f'gpu_types = "auto" picked {A40} ($0.40/h, 48 GB), {H100}')
    assert RTX not in picks[0]
    assert creates(setup.fake) == [A40, L40S]
    assert picks[1] == f'gpu_types = "auto" picked {L40S} ($0.79/h, 48 GB)'
    assert len(setup.fake.asked("GET", "catalog/gpus")) == 2
    assert asked[0].startswith("/api/models/")


async def test_auto_without_an_estimate_and_a_failed_reread_keeps_the_order(
    setup: Setup,
) -> None:
    # The Hub cannot be reached (a closed port): no VRAM floor, a warning. The catalog's
    # second read is refused: the first pick's order goes on, with a warning.
    closed = free_port()
    setup.env["OVERBRAINER_HUB__BASE_URL"] = f"http://127.0.0.1:{closed}"
    config = setup.project / "overbrainer.toml"
    config.write_text(
        config.read_text().replace(f'gpu_types = ["{A40}", "{RTX}"]', 'gpu_types = "auto"')
    )
    setup.fake.fail(
        Fault("POST", "pods", status=400, detail=CAPACITY, exact=True),
        Fault("GET", "catalog/gpus", create=True, exact=True),
        Fault("GET", "catalog/gpus", status=403, detail="not allowed", exact=True),
    )
    done = await train(setup)
    err = done.stderr.decode()
    assert done.returncode == 0, err
    said = messages(err)
    assert any(
        line.startswith("cannot estimate the VRAM the run needs (Hugging Face could not be ")
        and line.endswith('gpu_types = "auto" picks without a VRAM floor')
        for line in said
    ), err
    assert any(
        line.startswith("cannot read Runpod's GPU catalog again (")
        and line.endswith('the other gpu_types = "auto" picks are tried in their first order')
        for line in said
    ), err
    assert creates(setup.fake) == [A40, RTX]
    assert len(setup.fake.asked("GET", "catalog/gpus")) == 2
