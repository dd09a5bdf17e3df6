"""The real `llama-server` (built by `.ci/llama-cpp-tools.sh`) serving the tiny random Llama of
tests/gguf_support.py on 127.0.0.1: an OpenAI-compatible provider whose answers are gibberish.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import attrs

from tests.gguf_support import write_tiny_llama
from tests.llama_support import LlamaTools
from tests.ports import free_port
from tests.server_process import stop_group, wait_until_up

READY_WITHIN = 60.0
SLOTS = 4
"""Parallel slots: the pipeline's requests are answered four at a time."""
CONTEXT_PER_SLOT = 2048
"""Room for the judge's prompt (some 700 tokens with an answer): more than the 512 the tiny
model says it was trained on (tests/gguf_support.py CONTEXT), so the model's
`llama.context_length` is overridden at load (llama-server caps a slot at it)."""


@attrs.frozen
class LlamaServer:
    """A running llama-server: where it listens and the file it logs to."""

    url: str
    log: Path

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (`/v1`)."""
        return f"{self.url}/v1"


def _health(url: str) -> str | None:
    """The `status` of `/health`, or None when it does not answer 200 yet."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
            status = json.loads(reply.read()).get("status")
            return str(status) if reply.status == 200 else None
    except (OSError, urllib.error.URLError, ValueError):
        return None


def serve_tiny_model(tools: LlamaTools, directory: Path) -> Iterator[LlamaServer]:
    """Write the tiny GGUF and serve it until the generator is closed."""
    model = directory / "tiny.gguf"
    write_tiny_llama(model)
    log = directory / "llama-server.log"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [str(tools.bin / "llama-server"), "-m", str(model)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--no-webui"]
    command += ["-np", str(SLOTS), "-c", str(SLOTS * CONTEXT_PER_SLOT), "-t", "2"]
    # Greedy, seeded sampling: the same gibberish every run, so the counts can be exact.
    command += ["--temp", "0", "--seed", "42"]
    command += ["--override-kv", f"llama.context_length=int:{CONTEXT_PER_SLOT}"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=directory,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until_up(
            "llama-server", lambda: _health(url) == "ok", process, log, READY_WITHIN, poll=0.1
        )
        yield LlamaServer(url=url, log=log)
    finally:
        stop_group(process)
