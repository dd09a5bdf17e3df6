"""Export figures on the tiny model: `overbrainer export` wall time with the llama.cpp cache
empty (fetch + verify + unpack from a loopback release) and filled, then the converter and
`llama-quantize` alone on the same model, so the fetch, convert and quantize parts show.

Needs torch, transformers, sentencepiece and the llama.cpp tools (`.ci/llama-cpp-tools.sh`).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from overbrainer.targets.llama_cpp import helpers_script
from tests.export_support import add_run
from tests.llama_support import (
    TEST_TAG,
    LlamaTools,
    _wait_listening,
    build_tools,
    pack_release,
    sha256_of,
)
from tests.ports import free_port
from tests.tiny_model import make_tiny_model
from tests.train_helpers import command, make_project

ROUNDS = 3
RUN = "my_project_20261203-120000"


def _timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def _release_env(tools: LlamaTools, port: int) -> dict[str, str]:
    release = tools.root / "release"
    source = release / "archive" / "refs" / "tags" / f"{TEST_TAG}.tar.gz"
    binary = (
        release / "releases" / "download" / TEST_TAG / f"llama-{TEST_TAG}-bin-ubuntu-x64.tar.gz"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    env.update(
        OVERBRAINER_LLAMA_CPP=TEST_TAG,
        OVERBRAINER_LLAMA_CPP_URL=f"http://127.0.0.1:{port}",
        OVERBRAINER_LLAMA_CPP_SOURCE_SHA256=sha256_of(source),
        OVERBRAINER_LLAMA_CPP_UBUNTU_X64_SHA256=sha256_of(binary),
    )
    return env


def _export(project: Path, env: dict[str, str], quantize: str) -> None:
    done = subprocess.run(
        command(project, "export", RUN, "--quantize", quantize),
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr)


def _fetch_both(env: dict[str, str], folder: Path) -> None:
    """The helpers' `fetch` and `unpack` of the source and binary archives, as export.sh does."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    url, tag = env["OVERBRAINER_LLAMA_CPP_URL"], TEST_TAG
    steps = (
        f'fetch "{url}/archive/refs/tags/{tag}.tar.gz" '
        f'"{env["OVERBRAINER_LLAMA_CPP_SOURCE_SHA256"]}" "{folder}/s.tar.gz" && '
        f'unpack "{folder}/s.tar.gz" "llama.cpp-{tag}" "{folder}/source" && '
        f'fetch "{url}/releases/download/{tag}/llama-{tag}-bin-ubuntu-x64.tar.gz" '
        f'"{env["OVERBRAINER_LLAMA_CPP_UBUNTU_X64_SHA256"]}" "{folder}/b.tar.gz" && '
        f'unpack "{folder}/b.tar.gz" "llama-{tag}" "{folder}/bin"'
    )
    script = f"SCRIPT_NAME=bench\n{helpers_script()}\n{steps}\n"
    subprocess.run(["sh", "-c", script], check=True, capture_output=True)


def main() -> None:
    tools = build_tools()
    pack_release(tools, tools.root / "release")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=tools.root / "release",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_listening(port, server)
        env = _release_env(tools, port)
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            model = make_tiny_model(root / "model")
            project = make_project(root / "p")
            add_run(project, model)
            cache = project / "runs" / ".cache"
            uncached, cached = [], []
            for _ in range(ROUNDS):
                shutil.rmtree(cache, ignore_errors=True)
                uncached.append(_timed(lambda: _export(project, env, "Q4_K_M")))
                cached.append(_timed(lambda: _export(project, env, "Q4_K_M")))
            source = cache / "llama.cpp" / TEST_TAG / "source"
            quantize = cache / "llama.cpp" / TEST_TAG / "ubuntu-x64" / "llama-quantize"
            f16 = root / "model-f16.gguf"
            convert_env = {**env, "PYTHONPATH": str(source / "gguf-py")}
            convert = [
                _timed(
                    lambda: subprocess.run(
                        [
                            sys.executable,
                            str(source / "convert_hf_to_gguf.py"),
                            str(model),
                            "--outtype",
                            "f16",
                            "--outfile",
                            str(f16),
                        ],
                        env=convert_env,
                        capture_output=True,
                        check=True,
                    )
                )
                for _ in range(ROUNDS)
            ]
            quant = [
                _timed(
                    lambda: subprocess.run(
                        [str(quantize), str(f16), str(root / "q.gguf"), "Q4_K_M"],
                        capture_output=True,
                        check=True,
                    )
                )
                for _ in range(ROUNDS)
            ]
            size = f16.stat().st_size
            fetch = [_timed(lambda: _fetch_both(env, root / "fetched")) for _ in range(ROUNDS)]
            archives = sum(p.stat().st_size for p in (tools.root / "release").rglob("*.tar.gz"))
    finally:
        server.terminate()
        server.wait(timeout=10)
    med = statistics.median
    print(f"tiny model: {size / 1e6:.2f} MB as F16 GGUF; median of {ROUNDS} rounds")
    print(f"export Q4_K_M, cache empty (fetch, verify, unpack): {med(uncached):.2f} s")
    print(f"export Q4_K_M, cache filled:                         {med(cached):.2f} s")
    print(f"fetch + verify + unpack alone ({archives / 1e6:.1f} MB):        {med(fetch):.2f} s")
    print(f"convert_hf_to_gguf.py alone (f16):                   {med(convert):.2f} s")
    print(f"llama-quantize alone (Q4_K_M):                       {med(quant):.2f} s")


if __name__ == "__main__":
    main()
