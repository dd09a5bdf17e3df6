"""The stand-in conversion of the export tests that run the real command without torch.

A `python3` first on PATH answers the job's module checks and writes a small file as the
converter's GGUF (every other call goes to this interpreter), and a release of stand-in
llama.cpp tools is served from 127.0.0.1, so export.sh runs its own fetch, verify and deliver
path.
"""

from __future__ import annotations

import collections.abc
import contextlib
import sys
from pathlib import Path

from tests.llama_support import (
    TEST_TAG,
    LlamaRelease,
    LlamaTools,
    pack_release,
    served_directory,
    sha256_of,
)
from tests.train_helpers import standin_env

GGUF = b"GGUF stand-in model\n"
"""What the stand-in converter writes."""

PYTHON = f"""#!/bin/sh
case "$1" in
-c) case "$2" in
    *huggingface_hub*) [ -n "${{STANDIN_HUB:-}}" ] || exit 0;;
    *importlib.util*) exit 0;;
    esac;;
*convert_hf_to_gguf.py)
    [ -z "${{STANDIN_CONVERTED:-}}" ] || printf '%s\\n' "$2" >> "$STANDIN_CONVERTED"
    while [ "$#" -gt 0 ]; do [ "$1" = --outfile ] && out="$2"; shift; done
    printf '{GGUF.decode().strip()}\\n' > "$out"; exit 0;;
esac
exec {sys.executable} "$@"
"""
"""The job's `python3`: the module checks pass (huggingface_hub's only with `STANDIN_HUB` set:
then the real check runs), the converter writes GGUF's bytes and, with `STANDIN_CONVERTED`,
appends the folder it converted to that file."""


@contextlib.contextmanager
def standin_release(tmp_path: Path) -> collections.abc.Iterator[LlamaRelease]:
    """Stand-in llama.cpp tools packed as a release and served on 127.0.0.1."""
    tools = LlamaTools(tmp_path / "tools")
    (tools.source).mkdir(parents=True)
    (tools.source / "convert_hf_to_gguf.py").write_text("raise SystemExit('not run')\n")
    tools.bin.mkdir()
    for tool in ("llama-quantize", "llama-server"):
        (tools.bin / tool).write_text('#!/bin/sh\ncp "$1" "$2"\n')
        (tools.bin / tool).chmod(0o755)
    directory = tmp_path / "release"
    pack_release(tools, directory)
    binary = directory / "releases" / "download" / TEST_TAG / f"llama-{TEST_TAG}-bin-ubuntu-x64"
    with served_directory(directory) as url:
        yield LlamaRelease(
            url=url,
            tag=TEST_TAG,
            source_sha256=sha256_of(directory / "archive" / "refs" / "tags" / f"{TEST_TAG}.tar.gz"),
            binary_sha256=sha256_of(binary.with_name(binary.name + ".tar.gz")),
            directory=directory,
        )


def standin_export_env(tmp_path: Path, release: LlamaRelease, **extra: str) -> dict[str, str]:
    """The command's environment: the stand-in `python3` and an `ollama` that succeeds."""
    env = standin_env(tmp_path / "bin", **extra) | release.env()
    python = tmp_path / "bin" / "python3"
    python.write_text(PYTHON)
    python.chmod(0o755)
    ollama = tmp_path / "bin" / "ollama"
    ollama.write_text('#!/bin/sh\n[ "$1" = create ] && [ -f Modelfile ]\n')
    ollama.chmod(0o755)
    return env
