"""The pinned llama.cpp release used by export and compare; every value can be overridden."""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import resources

import attrs

ENV_PREFIX = "OVERBRAINER_LLAMA_CPP"

# The reference's pin (spec reference-compare-export-push-tui.md §B.4). A mirror or a newer
# release is used by setting the OVERBRAINER_LLAMA_CPP* variables, never by editing code.
TAG = "b11320"
REPO_URL = "https://github.com/ggml-org/llama.cpp"
CUDA = "13.4"
ROCM = "10.0"
SOURCE_SHA256 = "edd777f61c1d3704456f01bbb9a77b4bd71a1b39d9b8fe0109c3d65c2c4ece74"
UBUNTU_X64_SHA256 = "ef1856938dc1434138ce53688791eb0d2d64cf46e309a0942a12bba3366c0919"
UBUNTU_ARM64_SHA256 = "88589b963d8e2ffd2d4df2f542ed7e301fb636b637c99081f5d58646aee20a9a"
MACOS_ARM64_SHA256 = "f6f337fc7d2ff9260f53177cf4fe6bbf6b0f7faa75a49fb224aaf66885a5c956"
UBUNTU_CUDA_X64_SHA256 = "4c6b7cf40228efb96930f6694e7faae43a7e01993baba8e7894e2a3fc43e8a31"
UBUNTU_CUDA_ARM64_SHA256 = "df2ea0d5c3bd5492dda70cd86f2a384709f7aa7ceec123b159e20b2844ce2f46"
CUDART_X64_SHA256 = "249a86f9156641b98d586c6c6c649335f691d3a27f9fdaaca699af9cbfbb3ca2"
CUDART_ARM64_SHA256 = "e0895065d9244b3f8a50c2d85e196605e8a48c1f06a53f2f52db089fbd29d8bb"
UBUNTU_ROCM_X64_SHA256 = "d3f610c849bc8d365c31a62dba9c1a309a783202fe5d86d85f6a64b34cecb195"

# Environment suffix (after ENV_PREFIX) -> built-in value; "" is the tag itself.
_DEFAULTS: dict[str, str] = {
    "": TAG,
    "_URL": REPO_URL,
    "_SOURCE_SHA256": SOURCE_SHA256,
    "_UBUNTU_X64_SHA256": UBUNTU_X64_SHA256,
    "_UBUNTU_ARM64_SHA256": UBUNTU_ARM64_SHA256,
    "_MACOS_ARM64_SHA256": MACOS_ARM64_SHA256,
    "_CUDA": CUDA,
    "_UBUNTU_CUDA_X64_SHA256": UBUNTU_CUDA_X64_SHA256,
    "_UBUNTU_CUDA_ARM64_SHA256": UBUNTU_CUDA_ARM64_SHA256,
    "_CUDART_X64_SHA256": CUDART_X64_SHA256,
    "_CUDART_ARM64_SHA256": CUDART_ARM64_SHA256,
    "_ROCM": ROCM,
    "_UBUNTU_ROCM_X64_SHA256": UBUNTU_ROCM_X64_SHA256,
}

ENV_NAMES: tuple[str, ...] = tuple(ENV_PREFIX + suffix for suffix in _DEFAULTS)


@attrs.frozen
class LlamaCppPin:
    """One resolved llama.cpp pin: the tag, where to fetch it, and the SHA-256 of each archive."""

    values: Mapping[str, str]

    @property
    def tag(self) -> str:
        """The release tag, e.g. `b11320`."""
        return self.values[ENV_PREFIX]

    @property
    def url(self) -> str:
        """The repository URL the source and binary archives are fetched under."""
        return self.values[ENV_PREFIX + "_URL"].rstrip("/")

    def job_env(self) -> dict[str, str]:
        """The 13 `OVERBRAINER_LLAMA_CPP*` variables given to export and compare jobs."""
        return dict(self.values)


def resolve_pin(environ: Mapping[str, str] | None = None) -> LlamaCppPin:
    """The pin with each `OVERBRAINER_LLAMA_CPP*` variable that is set (and not empty) applied."""
    env = os.environ if environ is None else environ
    values = {}
    for suffix, default in _DEFAULTS.items():
        name = ENV_PREFIX + suffix
        values[name] = env.get(name) or default
    return LlamaCppPin(values=values)


def helpers_script() -> str:
    """The shared shell helpers (`say`, `fail`, `fetch URL SHA PATH`, `unpack`) for job scripts."""
    return (
        resources.files("overbrainer.targets")
        .joinpath("scripts", "llama_cpp.sh")
        .read_text("utf-8")
    )
