"""The real LiteLLM proxy as a provider: its venv (built by `.ci/litellm-venv.sh`, cached outside
the checkout) and a proxy on 127.0.0.1 whose models answer with `mock_response`.

A `mock_response` in a model's `litellm_params` makes LiteLLM answer with that fixed text and
never call an upstream; the request still goes through the proxy's own auth, routing, rate
limiting and response shaping, which is what the tests are after. The config is JSON, which
LiteLLM's YAML loader reads as it is.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

import attrs
import pytest

from tests.ports import free_port
from tests.real_parts import missing
from tests.server_process import stop_group, wait_until_up

REPO_ROOT = Path(__file__).resolve().parent.parent
VENV_SCRIPT = REPO_ROOT / ".ci" / "litellm-venv.sh"
MASTER_KEY = "sk-overbrainer-test-master"
READY_WITHIN = 120.0
"""Seconds the proxy may take to answer its readiness probe (its imports are slow on 2 cores)."""


@attrs.frozen
class MockModel:
    """A model the proxy serves: its name, its fixed answer and its requests-per-minute limit."""

    name: str
    answer: str
    rpm: int | None = None


@attrs.frozen
class LiteLLMProxy:
    """A running proxy: where it listens, its key, and the file it logs to."""

    url: str
    key: str
    log: Path

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (`/v1`)."""
        return f"{self.url}/v1"


def litellm_venv() -> Path:
    """The cached LiteLLM venv, made by `.ci/litellm-venv.sh` on first use (a few minutes)."""
    if not VENV_SCRIPT.is_file():
        missing(f"{VENV_SCRIPT} is not here")
    done = subprocess.run(["bash", str(VENV_SCRIPT)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        missing(f"installing the LiteLLM proxy failed:\n{done.stderr[-4000:]}")
    venv = Path(done.stdout.strip().splitlines()[-1])
    if not (venv / "bin" / "litellm").is_file():
        missing(f"{venv}/bin/litellm is not here after .ci/litellm-venv.sh")
    return venv


def proxy_config(models: list[MockModel]) -> dict[str, object]:
    """The proxy's config: one deployment per model, answered by its mock, behind a master key."""
    model_list = []
    for model in models:
        params: dict[str, object] = {
            "model": f"openai/{model.name}",
            "api_key": "unused-by-a-mock",
            "mock_response": model.answer,
        }
        if model.rpm is not None:
            params["rpm"] = model.rpm
        model_list.append({"model_name": model.name, "litellm_params": params})
    return {"model_list": model_list, "general_settings": {"master_key": MASTER_KEY}}


def proxy_env() -> dict[str, str]:
    """The environment of the proxy: offline (no cost map download, no telemetry), no DB."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERBRAINER_", "LITELLM_"))}
    env.pop("DATABASE_URL", None)
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env["LITELLM_TELEMETRY"] = "False"
    env["NO_COLOR"] = "1"
    return env


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health/readiness", timeout=2) as reply:
            return bool(reply.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def start_proxy(venv: Path, directory: Path, models: list[MockModel]) -> Iterator[LiteLLMProxy]:
    """Run `litellm --config` on a free loopback port until the generator is closed."""
    config = directory / "litellm.json"
    config.write_text(json.dumps(proxy_config(models), indent=2), encoding="utf-8")
    log = directory / "litellm.log"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [str(venv / "bin" / "litellm"), "--config", str(config)]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=directory,
            env=proxy_env(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until_up(
            "the LiteLLM proxy", lambda: _ready(url), process, log, READY_WITHIN, poll=0.25
        )
        yield LiteLLMProxy(url=url, key=MASTER_KEY, log=log)
    finally:
        stop_group(process)


def provider_env(proxy: LiteLLMProxy, provider: str) -> Mapping[str, str]:
    """The `OVERBRAINER_PROVIDERS__<NAME>__*` variables that point a provider at the proxy."""
    prefix = f"OVERBRAINER_PROVIDERS__{provider.upper()}__"
    return {f"{prefix}BASE_URL": proxy.base_url, f"{prefix}API_KEY": proxy.key}


@pytest.fixture(scope="session")
def litellm_venv_path() -> Path:
    """The LiteLLM venv (installed once, then cached outside the checkout)."""
    return litellm_venv()
