"""`export --json`: what was written where, through the real command on the local target.

The conversion is a stand-in (no torch here): tests/export_standin.py.
"""

from __future__ import annotations

import collections.abc
import hashlib
import json
from pathlib import Path

import pytest

from overbrainer.export.record import read_export_record
from tests.export_standin import GGUF, standin_export_env, standin_release
from tests.export_support import add_run
from tests.llama_support import TEST_TAG, LlamaRelease
from tests.train_helpers import kill_jobs, make_project, overbrainer, standin_env

RUN = "my_project_20261203-120000"


@pytest.fixture
def release(tmp_path: Path) -> collections.abc.Iterator[LlamaRelease]:
    """Stand-in llama.cpp tools packed as a release and served on 127.0.0.1."""
    with standin_release(tmp_path) as served:
        yield served


@pytest.fixture
def project(tmp_path: Path) -> collections.abc.Iterator[Path]:
    root = make_project(tmp_path / "p")
    yield root
    kill_jobs(root)


def test_export_json_says_what_it_wrote_where(
    project: Path, tmp_path: Path, release: LlamaRelease
) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    run_dir = add_run(project, model)
    env = standin_export_env(tmp_path, release)
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
        "model": "child",
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
