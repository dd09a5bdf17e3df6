"""The loopback fake Hub in a subprocess, and a project holding one finished run to push."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.train_helpers import make_project

TOKEN = "hf_fake_token_0123456789"
RUN_ID = "demo_20261203-120000"
FILES = {
    "adapter_config.json": b'{"peft_type": "LORA"}\n',
    "adapter_model.safetensors": b"\x01weights" * 4096,
    "tokenizer.json": b'{"version": "1.0"}\n',
    "gguf/demo_20261203-120000-Q4_K_M.gguf": b"GGUF" + b"\x00" * 70_000,
    "gguf/Modelfile": b"FROM ./demo_20261203-120000-Q4_K_M.gguf\n",
    "checkpoint-5/adapter_model.safetensors": b"old",
    ".cache/x": b"hidden",
    "debug.log": b"log",
    "README.md": b"axolotl's card",
}


class FakeHub:
    """A running fake Hub: its URL, its control call and its request log."""

    def __init__(self, url: str) -> None:
        self.url = url

    def control(self, **change: Any) -> None:
        """Change the fake's settings (token, user, status, echo_auth, delays, repos, cards)."""
        request = urllib.request.Request(
            f"{self.url}/_control", data=json.dumps(change).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()

    def log(self) -> list[dict[str, Any]]:
        """Every Hub call so far, in order."""
        with urllib.request.urlopen(f"{self.url}/_log", timeout=10) as response:
            entries: list[dict[str, Any]] = json.loads(response.read())
            return entries

    def calls(self, name: str) -> list[dict[str, Any]]:
        """The logged calls of one kind (`upload`, `commit`, ...)."""
        return [entry for entry in self.log() if entry["call"] == name]


@contextmanager
def fake_hub(tmp: Path) -> Iterator[FakeHub]:
    """Start the fake Hub in a subprocess; stop it at the end."""
    port_file = tmp / "hub.url"
    process = subprocess.Popen(
        [sys.executable, "-m", "overbrainer.devtools.fake_hub", str(port_file)]
    )
    try:
        deadline = time.monotonic() + 20
        while not port_file.exists():
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("the fake Hub did not start")
            time.sleep(0.02)
        yield FakeHub(port_file.read_text())
    finally:
        process.kill()
        process.wait()


def make_run(root: Path, files: dict[str, bytes] | None = None, state: str = "succeeded") -> Path:
    """A project at `root` with one finished run holding `files` under `output/`."""
    make_project(root)
    run_dir = root / "runs" / RUN_ID
    for name, data in (FILES if files is None else files).items():
        path = run_dir / "output" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    record = {
        "id": RUN_ID,
        "target": "local",
        "created": "2026-12-03T12:00:00Z",
        "remote_dir": str(run_dir),
        "job": None,
        "state": state,
        "message": None,
    }
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "run.json").write_text(json.dumps(record, indent=2) + "\n")
    return run_dir


def hub_env(home: Path, url: str | None, token: str | None = TOKEN) -> dict[str, str]:
    """The command's environment: our token and endpoint, Xet off, decoys HF_TOKEN and HF_HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERBRAINER_", "HF_"))}
    env.update(HOME=str(home), HF_HUB_DISABLE_XET="1", OVERBRAINER_NO_UPDATE_CHECK="1")
    env["HF_TOKEN"] = "hf_decoy_must_never_be_sent_0000"
    (home / ".cache" / "huggingface").mkdir(parents=True, exist_ok=True)
    (home / ".cache" / "huggingface" / "token").write_text("hf_decoy_file_token_0000\n")
    if token is not None:
        env["OVERBRAINER_HF_TOKEN"] = token
    if url is not None:
        env["OVERBRAINER_HUB__BASE_URL"] = url
    return env


def push_command(root: Path, *args: str) -> list[str]:
    """The `overbrainer push` command line on the project."""
    return [sys.executable, "-m", "overbrainer", "-C", str(root), "push", RUN_ID, *args]


def dry_run_card(root: Path, run_dir: Path, env: dict[str, str]) -> str:
    """The model card `overbrainer push --dry-run` renders for the run (it must exit 0)."""
    result = subprocess.run(
        push_command(root, "--dry-run"), env=env, capture_output=True, text=True, timeout=90
    )
    assert result.returncode == 0, result.stderr
    return (run_dir / "hub" / "README.md").read_text()
