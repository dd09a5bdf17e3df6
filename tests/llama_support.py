"""The real llama.cpp tools for the export and compare tests, served as a pinned "release".

The tools come only from the package registry: `.ci/llama-cpp-tools.sh` builds `llama-quantize`
and `llama-server` from the llama.cpp tree vendored in the llama-cpp-python source distribution
and caches them outside the checkout. Here they are packed as the two archives a real release
has (the source tarball and the `ubuntu-x64` binary archive), served from a loopback HTTP
server, and their real SHA-256s given through the `OVERBRAINER_LLAMA_CPP*` variables, so the job
scripts run their own fetch-verify-unpack path.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import shutil
import socket
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from tests.ports import free_port
from tests.real_parts import missing

REPO_ROOT = Path(__file__).resolve().parent.parent
BUILD_SCRIPT = REPO_ROOT / ".ci" / "llama-cpp-tools.sh"
TEST_TAG = "b0test"
# What the slim source tarball carries: all convert_hf_to_gguf.py needs.
SOURCE_PARTS = ("convert_hf_to_gguf.py", "conversion", "gguf-py", "LICENSE")


@attrs.frozen
class LlamaTools:
    """The built tools: the cache directory with `bin/` and `source/`."""

    root: Path

    @property
    def source(self) -> Path:
        """The vendored llama.cpp source tree."""
        return self.root / "source"

    @property
    def bin(self) -> Path:
        """The directory holding `llama-quantize` and `llama-server`."""
        return self.root / "bin"


@attrs.frozen
class LlamaRelease:
    """A served release: its base URL, tag and the environment that pins a job to it."""

    url: str
    tag: str
    source_sha256: str
    binary_sha256: str
    directory: Path

    def env(self) -> dict[str, str]:
        """The `OVERBRAINER_LLAMA_CPP*` variables that point a job at this release."""
        return {
            "OVERBRAINER_LLAMA_CPP": self.tag,
            "OVERBRAINER_LLAMA_CPP_URL": self.url,
            "OVERBRAINER_LLAMA_CPP_SOURCE_SHA256": self.source_sha256,
            "OVERBRAINER_LLAMA_CPP_UBUNTU_X64_SHA256": self.binary_sha256,
        }


def build_tools() -> LlamaTools:
    """Build (or find cached) the llama.cpp tools; skips the test where no compiler exists."""
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        missing("the llama.cpp test release is built for Linux x86_64 only")
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            missing(f"{tool} is not installed: the llama.cpp tools cannot be built")
    done = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"building the llama.cpp tools failed:\n{done.stderr[-4000:]}")
    return LlamaTools(root=Path(done.stdout.strip().splitlines()[-1]))


def sha256_of(path: Path) -> str:
    """The SHA-256 of a file, hex."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def pack_release(tools: LlamaTools, directory: Path, tag: str = TEST_TAG) -> None:
    """Write the release layout under `directory` (GitHub's URL paths), once per cache."""
    source_tar = directory / "archive" / "refs" / "tags" / f"{tag}.tar.gz"
    binary_tar = directory / "releases" / "download" / tag / f"llama-{tag}-bin-ubuntu-x64.tar.gz"
    if source_tar.exists() and binary_tar.exists():
        return
    source_tar.parent.mkdir(parents=True, exist_ok=True)
    binary_tar.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(source_tar.with_suffix(".part"), "w:gz") as tar:
        for part in SOURCE_PARTS:
            if (tools.source / part).exists():
                tar.add(tools.source / part, arcname=f"llama.cpp-{tag}/{part}")
    with tarfile.open(binary_tar.with_suffix(".part"), "w:gz") as tar:
        for tool in ("llama-quantize", "llama-server"):
            tar.add(tools.bin / tool, arcname=f"llama-{tag}/{tool}")
    os.replace(source_tar.with_suffix(".part"), source_tar)
    os.replace(binary_tar.with_suffix(".part"), binary_tar)


def _wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the release server exited before it listened")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the release server did not listen within 60 s")


@contextlib.contextmanager
def served_directory(directory: Path) -> Iterator[str]:
    """`directory` served over HTTP on 127.0.0.1 by a real server (a release's download
    site), listening once inside; its base URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=directory,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_listening(port, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def llama_tools() -> LlamaTools:
    """The built llama.cpp tools (built once, then cached outside the checkout)."""
    return build_tools()


@pytest.fixture(scope="session")
def llama_release(llama_tools: LlamaTools) -> Iterator[LlamaRelease]:
    """The tools packed as a release and served on 127.0.0.1 by a real HTTP server."""
    directory = llama_tools.root / "release"
    pack_release(llama_tools, directory)
    with served_directory(directory) as url:
        yield LlamaRelease(
            url=url,
            tag=TEST_TAG,
            source_sha256=sha256_of(directory / "archive" / "refs" / "tags" / f"{TEST_TAG}.tar.gz"),
            binary_sha256=sha256_of(
                directory
                / "releases"
                / "download"
                / TEST_TAG
                / f"llama-{TEST_TAG}-bin-ubuntu-x64.tar.gz"
            ),
            directory=directory,
        )
