"""`overbrainer compare` of a run on an `ssh` target: a real sshd on 127.0.0.1, the GGUF
uploaded because the target lacks it, the artifacts fetched and verified (§A.7)."""

from __future__ import annotations

import collections.abc
import json
from pathlib import Path

import pytest
import trio

from overbrainer.devtools.stub_provider import open_stub
from tests.compare_support import RUN_ID, compare_env, make_compare_project, scripted_judge
from tests.llama_support import LlamaRelease
from tests.pipeline_support import overbrainer
from tests.sshd_support import ALIAS, Sshd, kill_jobs_under

TARGET = """
[targets.box]
kind = "ssh"
runtime = "native"
workdir = "{workdir}"
"""


@pytest.fixture
def remote(tmp_path: Path) -> collections.abc.Iterator[Path]:
    folder = tmp_path / "remote"
    yield folder
    kill_jobs_under(folder)


def _ssh_project(tmp_path: Path, remote: Path) -> tuple[Path, Path]:
    """The project whose run lives on `box`; the target's workdir, resolved."""
    workdir = remote.resolve()
    root = make_compare_project(
        tmp_path / "p", questions=2, target="box", remote_dir=workdir / RUN_ID
    )
    with open(root / "overbrainer.toml", "a") as file:
        file.write(TARGET.format(workdir=workdir))
    return root, workdir


async def test_a_compare_on_an_ssh_target_uploads_the_gguf_and_fetches_the_answers(
    sshd: Sshd, remote: Path, tmp_path: Path, llama_release: LlamaRelease
) -> None:
    root, workdir = _ssh_project(tmp_path, remote)
    remote_run = workdir / RUN_ID
    env = compare_env(
        llama_release,
        tmp_path / "unused-cache",
        {
            "OVERBRAINER_TARGETS__BOX__HOST": ALIAS,
            "OVERBRAINER_SSH_CONFIG": str(sshd.client_config),
        },
    )
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(root, "compare", url=stub.url, env=env, limit=180)
    assert result.code == 0, result.stderr
    compares = root / "runs" / RUN_ID / "compares"
    (folder,) = compares.iterdir()
    remote_compare = remote_run / "compares" / folder.name
    # The GGUF went to the target's run directory, the llama.cpp build to its workdir's cache.
    assert (remote_run / "output" / "gguf" / "tiny-Q8_0.gguf").is_file()
    assert not (folder / ".upload").exists()
    assert (workdir / ".cache/overbrainer/llama.cpp/b0test/ubuntu-x64/llama-server").is_file()
    for name in ("child_answers.jsonl", "hardware.json", "server.log", "job.log"):
        assert (folder / name).read_bytes() == (remote_compare / name).read_bytes()
    answers = (folder / "child_answers.jsonl").read_text().splitlines()
    assert [json.loads(x)["id"] for x in answers] == ["q0", "q1"]
    record = json.loads((folder / "run.json").read_text())
    assert record["state"] == "succeeded" and record["remote_dir"] == str(remote_compare)
    assert (folder / "compare.md").is_file()


async def test_the_gguf_is_uploaded_again_only_when_the_target_copy_differs(
    sshd: Sshd, remote: Path, tmp_path: Path, llama_release: LlamaRelease
) -> None:
    root, workdir = _ssh_project(tmp_path, remote)
    env = compare_env(
        llama_release,
        tmp_path / "unused-cache",
        {
            "OVERBRAINER_TARGETS__BOX__HOST": ALIAS,
            "OVERBRAINER_SSH_CONFIG": str(sshd.client_config),
        },
    )
    local = root / "runs" / RUN_ID / "output" / "gguf" / "tiny-Q8_0.gguf"
    target = workdir / RUN_ID / "output" / "gguf" / "tiny-Q8_0.gguf"
    async with open_stub(scripted_judge) as stub:
        first = await overbrainer(root, "compare", url=stub.url, env=env, limit=180)
        assert first.code == 0, first.stderr
        uploaded = target.stat().st_mtime_ns
        await trio.sleep(0.05)
        same = await overbrainer(root, "compare", url=stub.url, env=env, limit=180)
        assert same.code == 0, same.stderr
        assert target.stat().st_mtime_ns == uploaded
        target.write_bytes(b"not the exported model")
        again = await overbrainer(root, "compare", url=stub.url, env=env, limit=180)
        assert again.code == 0, again.stderr
    assert target.read_bytes() == local.read_bytes()
