"""A model's shape from the Hugging Face Hub, for VRAM sizing (reference §8)."""

from __future__ import annotations

import re

import httpx2
import trio

from overbrainer import __version__
from overbrainer.model import redact
from overbrainer.targets.runpod.vram import ModelShape

TIMEOUT = 10.0
_PART = re.compile(r"[A-Za-z0-9._-]+")
_HIDDEN = ("hidden_size", "n_embd", "d_model")
_LAYERS = ("num_hidden_layers", "n_layer", "num_layers")


class ShapeUnknown(Exception):
    """Why a model's shape could not be read (the text is the warning's cause)."""


def is_repo_id(model: str) -> bool:
    """At most one `/`, parts of `[A-Za-z0-9._-]`, none starting with `.`."""
    parts = model.split("/")
    return 1 <= len(parts) <= 2 and all(
        _PART.fullmatch(part) and not part.startswith(".") for part in parts
    )


def _lookup(config: dict[str, object], names: tuple[str, ...]) -> int | None:
    inner = config.get("text_config")
    for table in (config, inner if isinstance(inner, dict) else {}):
        for name in names:
            value = table.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


async def fetch_shape(model: str, base_url: str, token: str | None = None) -> ModelShape:
    """Parameters from `safetensors.total`, the rest from `config.json`; `ShapeUnknown` else."""
    if not is_repo_id(model):
        raise ShapeUnknown(f"{model} is not a Hugging Face repo ID")
    headers = {"user-agent": f"overbrainer/{__version__}"}
    if token:
        redact.register(token)
        headers["authorization"] = f"Bearer {token}"
    base = base_url.rstrip("/")
    with trio.move_on_after(TIMEOUT):
        async with httpx2.AsyncClient(headers=headers, timeout=TIMEOUT) as client:
            info = await _get(client, f"{base}/api/models/{model}?expand[]=safetensors", model)
            config = await _get(client, f"{base}/{model}/resolve/main/config.json", model)
        return _shape(model, info, config)
    raise ShapeUnknown(f"Hugging Face took too long to describe {model}")


async def _get(client: httpx2.AsyncClient, url: str, model: str) -> dict[str, object]:
    try:
        response = await client.get(url, follow_redirects=True)
    except httpx2.HTTPError:
        raise ShapeUnknown(f"Hugging Face could not be reached for {model}") from None
    if response.status_code != 200:
        raise ShapeUnknown(f"Hugging Face answered {response.status_code} for {model}")
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise ShapeUnknown(f"Hugging Face's answer for {model} could not be read")
    return body


def _shape(model: str, info: dict[str, object], config: dict[str, object]) -> ModelShape:
    tensors = info.get("safetensors")
    total = tensors.get("total") if isinstance(tensors, dict) else None
    if not isinstance(total, int) or isinstance(total, bool) or total <= 0:
        raise ShapeUnknown(f"{model} does not give its size on Hugging Face")
    hidden, layers = _lookup(config, _HIDDEN), _lookup(config, _LAYERS)
    vocab = _lookup(config, ("vocab_size",))
    if hidden is None or layers is None or vocab is None:
        raise ShapeUnknown(f"{model} does not give its shape in config.json")
    return ModelShape(params=total, hidden=hidden, layers=layers, vocab=vocab)
