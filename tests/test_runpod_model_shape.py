"""A model's shape from a loopback stand-in for the Hugging Face Hub."""

from __future__ import annotations

import json

import pytest
import trio

from overbrainer.net.http_server import Request, Response, serve_http
from overbrainer.targets.runpod.model_shape import ShapeUnknown, fetch_shape
from overbrainer.targets.runpod.vram import ModelShape

INFO = {"safetensors": {"total": 4_022_468_096}}
CONFIG = {"text_config": {"hidden_size": 2560, "num_hidden_layers": 36}, "vocab_size": 151936}


@pytest.mark.parametrize(
    ("info", "status", "error"),
    [
        (INFO, 200, None),
        (INFO, 401, "Hugging Face answered 401 for Qwen/Qwen3-4B"),
        ({"safetensors": None}, 200, "Qwen/Qwen3-4B does not give its size on Hugging Face"),
    ],
)
async def test_fetch_shape(info: object, status: int, error: str | None) -> None:
    seen: list[Request] = []

    async def handle(request: Request) -> Response:
        seen.append(request)
        if request.path.startswith("/api/models/"):
            return Response(status, json.dumps(info).encode())
        return Response(200, json.dumps(CONFIG).encode())

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            host, port = await nursery.start(serve_http, handle, "127.0.0.1", 0)
            base = f"http://{host}:{port}"
            try:
                if error is None:
                    shape = await fetch_shape("Qwen/Qwen3-4B", base, "hf_TOKEN0123456789")
                    assert shape == ModelShape(4_022_468_096, 2560, 36, 151936)
                    assert seen[0].target == "/api/models/Qwen/Qwen3-4B?expand[]=safetensors"
                    assert seen[1].target == "/Qwen/Qwen3-4B/resolve/main/config.json"
                    assert seen[0].headers["authorization"] == "Bearer hf_TOKEN0123456789"
                else:
                    with pytest.raises(ShapeUnknown) as caught:
                        await fetch_shape("Qwen/Qwen3-4B", base)
                    assert str(caught.value) == error
            finally:
                nursery.cancel_scope.cancel()


async def test_a_path_is_not_a_repo_id() -> None:
    with pytest.raises(ShapeUnknown, match=r"^\./models/q is not a Hugging Face repo ID$"):
        await fetch_shape("./models/q", "http://127.0.0.1:9")
