"""`export --json`: what was written where, through the real command on the local target.

The conversion is a stand-in (no torch here): a `python3` first on PATH answers the job's
module check and writes a small file as the converter's GGUF, and a release of stand-in tools
is served from 127.0.0.1, so export.sh runs its own fetch, verify and deliver path.
"""

from __future__ import annotations

import collections.abc
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from overbrainer.export.record import read_export_record
from tests.export_support import add_run
from tests.llama_support import (
    TEST_TAG,
    LlamaRelease,
    LlamaTools,
    pack_release,
    served_directory,
    sha256_of,
)
from tests.train_helpers import kill_jobs, make_project, overbrainer, standin_env

RUN = "my_project_20261203-120000"
GGUF = b"GGUF stand-in model\n"

PYTHON = f"""#!/bin/sh
case "$1" in
-c) case "$2" in *importlib.util*) exit 0;; esac;;
*convert_hf_to_gguf.py)
    while [ "$#" -gt 0 ]; do [ "$1" = --outfile ] && out="$2"; shift; done
    printf '{GGUF.decode().strip()}\\n' > "$out"; exit 0;;
esac
exec {shutil.which("python3")} "$@"
"""
"""The job's `python3`: the module check passes, the converter writes GGUF's bytes."""


@pytest.fixture
def release(tmp_path: Path) -> collections.abc.Iterator[LlamaRelease]:
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


@pytest.fixture
def project(tmp_path: Path) -> collections.abc.Iterator[Path]:
    root = make_project(tmp_path / "p")
    yield root
    kill_jobs(root)


def export_env(tmp_path: Path, release: LlamaRelease) -> dict[str, str]:
    env = standin_env(tmp_path / "bin") | release.env()
    python = tmp_path / "bin" / "python3"
    python.write_text(PYTHON)
    python.chmod(0o755)
    ollama = tmp_path / "bin" / "ollama"
    ollama.write_text('#!/bin/sh\n[ "$1" = create ] && [ -f Modelfile ]\n')
    ollama.chmod(0o755)
    return env


def test_export_json_says_what_it_wrote_where(
    project: Path, tmp_path: Path, release: LlamaRelease
) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    run_dir = add_run(project, model)
    env = export_env(tmp_path, release)
    done = overbrainer(
        project, env, "export", RUN, "--quantize", "Q8_0", "--ollama", "me/child", "--json"
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert (document["command"], document["exit_code"], document["error"]) == ("export", 0, None)
    gguf = f"runs/{RUN}/output/gguf/{RUN}-Q8_0.gguf"
    [job] = (run_dir / "exports").iterdir()
    sha256 = read_export_record(job / "export.json").sha256
    assert sha256 == hashlib.sha256(GGUF).hexdigest()
    assert document["export"] == {
        "run_id": RUN,
        "gguf": gguf,
        "size_bytes": len(GGUF),
        "sha256": sha256,
        "quantize": "Q8_0",
        "llama_cpp": TEST_TAG,
        "modelfile": f"runs/{RUN}/output/gguf/Modelfile",
        "ollama_name": "me/child",
        "ollama_created": True,
    }
    assert (project / gguf).read_bytes() == GGUF
    # The result lines, on stdout without `--json`, are on stderr.
    assert f"export: GGUF in {gguf} (Q8_0, 0.0 MB), Modelfile beside it" in done.stderr
    assert "export: Ollama model me/child created: `ollama run me/child`" in done.stderr


def test_a_refused_export_gives_2_and_a_null_export(project: Path, tmp_path: Path) -> None:
    done = overbrainer(project, standin_env(tmp_path / "bin"), "export", RUN, "--json")
    assert done.returncode == 2
    document = json.loads(done.stdout)
    assert (document["exit_code"], document["export"]) == (2, None)
    assert document["error"] == done.stderr.splitlines()[-1].removeprefix("error: ")
