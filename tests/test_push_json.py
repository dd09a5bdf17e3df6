"""`push --json`: the repo, the commit and the files with their sizes (loopback fake Hub)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from overbrainer.hub.selection import repo_path
from tests.hub_support import (
    FILES,
    RUN_ID,
    TOKEN,
    FakeHub,
    hub_env,
    make_run,
    push_command,
)
from tests.test_push_dataset import make_dataset
from tests.train_helpers import wait_for

pytestmark = pytest.mark.hub

MODEL_FILES = [
    "Modelfile",
    "adapter_config.json",
    "adapter_model.safetensors",
    "demo_20261203-120000-Q4_K_M.gguf",
    "tokenizer.json",
]


def run(command: list[str], env: dict[str, str]) -> tuple[int, dict[str, object], str]:
    """The exit code, the document (stdout holds it alone) and stderr."""
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=90)
    assert TOKEN not in done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def remote_size(hub: FakeHub, repo: str, path: str) -> int:
    with urllib.request.urlopen(f"{hub.url}/{repo}/resolve/main/{path}", timeout=10) as answer:
        return len(answer.read())


def test_a_push_names_its_repo_commit_url_and_files(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    run_dir = make_run(root)
    code, document, stderr = run(push_command(root, "--json"), hub_env(tmp_path, hub.url))
    assert code == 0, stderr
    assert (document["command"], document["exit_code"], document["error"]) == ("push", 0, None)
    record = json.loads((run_dir / "hub" / "push.json").read_text())
    pushed = document["push"]
    assert isinstance(pushed, dict)
    files = pushed.pop("files")
    total = pushed.pop("total_bytes")
    assert pushed == {
        "repo": "alice/my-project",
        "repo_type": "model",
        "run_id": RUN_ID,
        "private": True,
        "dry_run": False,
        "commit": record["commit"],
        "url": record["url"],
    }
    assert isinstance(files, list)
    assert [f["path"] for f in files] == [*MODEL_FILES, "README.md"]  # the card last
    sizes = {repo_path(name): len(data) for name, data in FILES.items()}
    for item in files[:-1]:
        assert item["size_bytes"] == sizes[item["path"]]
    assert files[-1]["size_bytes"] == remote_size(hub, "alice/my-project", "README.md")
    assert sum(f["size_bytes"] for f in files[:-1]) == total
    # The text's result line went to stderr.
    assert f"push: {record['url']} (6 files, 0.1 MB)" in stderr.splitlines()


def test_a_dry_run_names_what_it_would_send(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    make_run(root)
    env = hub_env(tmp_path, hub.url, token=None)
    code, document, stderr = run(push_command(root, "--dry-run", "--json"), env)
    assert code == 0, stderr
    pushed = document["push"]
    assert isinstance(pushed, dict)
    assert (pushed["repo"], pushed["dry_run"], pushed["commit"], pushed["url"]) == (
        "<you>/my-project",
        True,
        None,
        None,
    )
    assert [f["path"] for f in pushed["files"]] == MODEL_FILES
    assert hub.log() == []


def test_a_dataset_push_names_its_files(tmp_path: Path, hub: FakeHub) -> None:
    root = make_dataset(tmp_path / "project")
    command = [sys.executable, "-m", "overbrainer", "-C", str(root), "push", "--dataset", "--json"]
    code, document, stderr = run(command, hub_env(tmp_path, hub.url))
    assert code == 0, stderr
    pushed = document["push"]
    assert isinstance(pushed, dict)
    assert (pushed["repo"], pushed["repo_type"], pushed["run_id"]) == (
        "alice/my-project-data",
        "dataset",
        None,
    )
    sizes = {f["path"]: f["size_bytes"] for f in pushed["files"]}
    assert sizes["data/train.jsonl"] == (root / "data" / "train.jsonl").stat().st_size
    assert sizes["data/eval.jsonl"] == (root / "data" / "eval.jsonl").stat().st_size
    assert pushed["total_bytes"] == sizes["data/train.jsonl"] + sizes["data/eval.jsonl"]


def test_ctrl_c_during_the_upload_gives_130_and_no_push(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    make_run(root)
    hub.control(hold={"upload": 1})  # the first file is stored, the second waits
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        process = subprocess.Popen(
            push_command(root, "--json"),
            env=hub_env(tmp_path, hub.url),
            stdout=stdout,
            stderr=stderr,
        )
    try:
        # The fake Hub's log has no event to wait on: poll it (a bound, not an ordering).
        wait_for(lambda: len(hub.calls("upload")) >= 2)
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=30)
    finally:
        process.kill()
        process.wait()
    assert code == 130
    document = json.loads(out.read_text())
    assert document["exit_code"] == 130
    assert document["error"] == "push cancelled: nothing was committed, run it again to resume"
    assert document["push"] is None
