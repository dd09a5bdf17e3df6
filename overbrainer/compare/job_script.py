"""The compare job's scripts: `compare.sh` (shared llama.cpp helpers first) and the client."""

from __future__ import annotations

from importlib import resources

from overbrainer.targets import helpers_script

SCRIPT = "compare.sh"
CLIENT = "compare_client.py"
BENCH_SCRIPT = "bench.sh"


def _text(name: str) -> str:
    return resources.files("overbrainer.compare").joinpath("scripts", name).read_text("utf-8")


def pick_build_script() -> str:
    """The `pick_build` function and its helpers (tested on their own under `sh`)."""
    return _text("pick_build.sh")


def compare_script() -> str:
    """`compare.sh`: the shared helpers, `pick_build`, then the job itself."""
    return "\n".join(
        [
            "#!/bin/sh",
            "SCRIPT_NAME=compare",
            helpers_script(),
            pick_build_script(),
            _text("fetch_server.sh"),
            _text("compare_main.sh"),
        ]
    )


def bench_script() -> str:
    """`bench.sh`: the same helpers and llama-server fetch, then lm-eval against each model."""
    return "\n".join(
        [
            "#!/bin/sh",
            "SCRIPT_NAME=bench",
            helpers_script(),
            pick_build_script(),
            _text("fetch_server.sh"),
            _text("bench_main.sh"),
        ]
    )


def client_script() -> str:
    """`compare_client.py`, standard library only."""
    return _text(CLIENT)
