"""`overbrainer compare --base` off this machine's native runtime: the base model's GGUF goes
where the child's goes (the container's mount, an SSH target's run directory, a new pod as
`base.gguf`) and its answers come back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from overbrainer.devtools.stub_provider import open_stub
from tests.compare_support import (
    BASE_GGUF,
    RUN_ID,
    add_base_export,
    compare_env,
    is_base_request,
    make_compare_project,
    scripted_judge,
)
from tests.container_support import calls, run_options
from tests.llama_support import LlamaRelease
from tests.pipeline_support import overbrainer
from tests.real_parts import needs
from tests.runpod_fake import RunpodFake
from tests.sshd_support import ALIAS, SSHD, Sshd
from tests.test_compare_container import _env, _in_container, engine_state  # noqa: F401
from tests.test_compare_runpod import _setup, pods  # noqa: F401
from tests.test_compare_ssh import _ssh_project, remote  # noqa: F401

COMPARES = f"runs/{RUN_ID}/compares"


def _compare_dir(root: Path) -> Path:
    (found,) = (root / COMPARES).iterdir()
    return found


def _ids(path: Path) -> list[str]:
    return [json.loads(x)["id"] for x in path.read_text().splitlines()]


async def test_the_base_is_served_in_the_container_from_the_mounted_run(
    tmp_path: Path,
    llama_release: LlamaRelease,
    engine_state: Path,  # noqa: F811
) -> None:
    root = make_compare_project(tmp_path / "p", questions=2)
    add_base_export(root)
    _in_container(root, "docker")
    env = _env(compare_env(llama_release, tmp_path / "cache"), tmp_path, engine_state)
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(root, "compare", "--base", url=stub.url, env=env, limit=240)
        assert result.code == 0, result.stderr
        assert len([r for r in stub.requests if r.is_completion and is_base_request(r)]) == 2
    folder = _compare_dir(root)
    (run_call, *_) = [c["argv"] for c in calls(engine_state)]
    passed = dict(item.partition("=")[::2] for item in run_options(run_call)["-e"])
    assert passed["OVERBRAINER_COMPARE_BASE_MODEL"] == f"/workspace/run/{BASE_GGUF}"
    assert _ids(folder / "base_answers.jsonl") == ["q0", "q1"]
    assert (folder / "base_server.log").is_file()
    assert "## The child against its base" in (folder / "compare.md").read_text()


async def test_the_base_gguf_is_uploaded_to_an_ssh_target_and_its_answers_fetched(
    sshd: Sshd,
    remote: Path,  # noqa: F811
    tmp_path: Path,
    llama_release: LlamaRelease,
) -> None:
    root, workdir = _ssh_project(tmp_path, remote)
    add_base_export(root)
    env = compare_env(
        llama_release,
        tmp_path / "unused-cache",
        {
            "OVERBRAINER_TARGETS__BOX__HOST": ALIAS,
            "OVERBRAINER_SSH_CONFIG": str(sshd.client_config),
        },
    )
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(root, "compare", "--base", url=stub.url, env=env, limit=240)
    assert result.code == 0, result.stderr
    folder = _compare_dir(root)
    remote_run = workdir / RUN_ID
    local = root / "runs" / RUN_ID / BASE_GGUF
    assert (remote_run / BASE_GGUF).read_bytes() == local.read_bytes()
    assert not (folder / ".upload").exists()
    remote_compare = remote_run / "compares" / folder.name
    for name in ("base_answers.jsonl", "base_server.log"):
        assert (folder / name).read_bytes() == (remote_compare / name).read_bytes()
    assert _ids(folder / "base_answers.jsonl") == ["q0", "q1"]


@needs(
    not SSHD.exists() or shutil.which("ssh") is None or shutil.which("curl") is None,
    "needs the OpenSSH server and client and curl (the pod's watchdog)",
)
async def test_the_base_goes_to_a_new_pod_as_base_gguf_and_is_deleted_after(
    tmp_path: Path,
    pods: tuple[RunpodFake, Path],  # noqa: F811
    llama_release: LlamaRelease,
) -> None:
    fake, pods_root = pods
    setup = _setup(tmp_path, fake, pods_root, compare_env(llama_release, tmp_path / "c"))
    add_base_export(setup.project)
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(
            setup.project, "compare", "--base", url=stub.url, env=setup.env, limit=240
        )
    assert result.code == 0, result.stderr
    folder = _compare_dir(setup.project)
    pod_dir = pods_root / "workspace" / "overbrainer" / folder.name
    for name in ("model.gguf", "base.gguf"):
        assert not (pod_dir / name).exists()
        assert not (folder / name).exists()
    assert _ids(folder / "base_answers.jsonl") == ["q0", "q1", "q2"]
    assert (folder / "base_server.log").read_bytes() == (pod_dir / "base_server.log").read_bytes()
    assert fake.pods == {}
