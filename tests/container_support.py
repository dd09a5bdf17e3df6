"""The stand-in `docker` and `podman` (tests/standin/container_standin.py) on a test's PATH."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

STANDIN = Path(__file__).parent / "standin" / "container_standin.py"
STATE_ENV = "STANDIN_CONTAINER_STATE"


def install_engines(bin_dir: Path, state: Path) -> dict[str, str]:
    """Write `docker` and `podman` into `bin_dir` (first on the test's PATH); the variables
    that point them at `state`."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for engine in ("docker", "podman"):
        script = bin_dir / engine
        script.write_text(f'#!/bin/sh\nexec {sys.executable} {STANDIN} {engine} "$@"\n')
        script.chmod(0o755)
    return {STATE_ENV: str(state)}


def calls(state: Path) -> list[dict[str, Any]]:
    """Every engine call recorded so far: `{"engine", "argv"}`."""
    path = state / "calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def run_options(argv: list[str]) -> dict[str, list[str]]:
    """The valued options of a recorded `run` line (`-e`, `-v`, `-w`, `--name`), in order,
    and the image with its command under `""`."""
    valued = {"--name", "-e", "-v", "-w", "--gpus", "--ulimit", "--device", "--user"}
    options: dict[str, list[str]] = {}
    i = 1
    while i < len(argv):
        word = argv[i]
        if word in valued:
            options.setdefault(word, []).append(argv[i + 1])
            i += 2
        elif word.startswith("-"):
            options.setdefault(word, []).append("")
            i += 1
        else:
            options[""] = argv[i:]
            break
    return options


def kill_containers(state: Path) -> None:
    """Leave no stand-in container behind after a test."""
    folder = state / "containers"
    if not folder.is_dir():
        return
    for entry in folder.iterdir():
        with contextlib.suppress(ValueError, OSError):
            os.killpg(int(entry.read_text()), signal.SIGKILL)
