"""`overbrainer push --dataset` against the loopback fake Hub, through the real huggingface_hub."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.hub_support import TOKEN, FakeHub, hub_env, make_run, push_command
from tests.train_helpers import make_project

pytestmark = pytest.mark.hub

REPO = "alice/my-project-data"
FILES = ["README.md", "data/eval.jsonl", "data/train.jsonl"]
SPLIT_LINE = {
    "stage": "split",
    "started_at": "2026-12-03T11:00:00Z",
    "ended_at": "2026-12-03T11:00:01Z",
    "status": "ok",
    "provider": None,
    "model": None,
    "done": 3,
    "skipped": 0,
    "failed": 0,
    "excluded": 4,
    "input_tokens": 0,
    "output_tokens": 0,
    "cost": None,
    "split": {"train": 2, "eval": 1, "orphaned": 1},
}


def example(number: int, topic: str = "ownership", pad: int = 0) -> str:
    """One example line of `train.jsonl` / `eval.jsonl` (`pad` makes it longer)."""
    item = {
        "id": f"q{number}",
        "topic": topic,
        "subtopic": "borrowing",
        "messages": [
            {"role": "user", "content": f"Question {number}?"},
            {"role": "assistant", "content": "Answer." + "x" * pad},
        ],
        "meta": {},
    }
    return json.dumps(item, separators=(",", ":")) + "\n"


def make_dataset(root: Path, train: str | None = None, eval_: str | None = None) -> Path:
    """A project whose split wrote two train examples and one eval example, and its history."""
    make_project(root)
    data = root / "data"
    (data / "train.jsonl").write_text(train if train is not None else example(1) + example(2))
    (data / "eval.jsonl").write_text(eval_ if eval_ is not None else example(3))
    (root / ".overbrainer" / "history.jsonl").write_text(json.dumps(SPLIT_LINE) + "\n")
    return root


def push(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "overbrainer", "-C", str(root), "push", "--dataset", *args]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=90)
    assert TOKEN not in result.stdout + result.stderr
    return result


def commits(hub: FakeHub) -> list[list[str]]:
    return [entry["commit"]["files"] for entry in hub.calls("commit")]


def remote_card(hub: FakeHub, repo: str) -> str:
    with urllib.request.urlopen(f"{hub.url}/{repo}/resolve/main/README.md", timeout=10) as answer:
        text: str = answer.read().decode()
        return text


def front(card: str) -> dict[str, Any]:
    head = card.split("---\n")[1]
    data: dict[str, Any] = yaml.safe_load(head)
    return data


def test_one_commit_with_the_files_and_a_card_the_hub_reads(tmp_path: Path, hub: FakeHub) -> None:
    root = make_dataset(tmp_path / "project")
    with open(root / "overbrainer.toml", "a") as config:
        config.write(
            '\n[quality]\njudge = { provider = "openrouter", model = "judge/model-1" }\n'
            'min_score = 8\ndecontaminate = ["bench/gsm8k.jsonl"]\n'
        )
    result = push(root, hub_env(tmp_path, hub.url))
    assert result.returncode == 0, result.stderr
    record = json.loads((root / ".overbrainer" / "hub-dataset.json").read_text())
    assert record["repo"] == REPO
    assert record["private"] is True
    assert record["url"].endswith(f"/datasets/{REPO}/commit/{record['commit']}")
    assert result.stdout.splitlines() == [f"push: {record['url']} (3 files, 0.0 MB)"]
    assert commits(hub) == [FILES]
    # Every call went to the dataset endpoints, the repo created as a dataset.
    paths = [entry["path"] for entry in hub.log() if entry["call"] not in ("whoami", "validate")]
    assert all("/datasets/" in path or path == "/api/repos/create" for path in paths), paths

    card = remote_card(hub, f"datasets/{REPO}")
    meta = front(card)
    assert meta["license"] == "other"
    assert meta["task_categories"] == ["text-generation", "question-answering"]
    assert meta["configs"] == [
        {
            "config_name": "default",
            "data_files": [
                {"split": "train", "path": "data/train.jsonl"},
                {"split": "eval", "path": "data/eval.jsonl"},
            ],
        }
    ]
    assert meta["size_categories"] == ["n<1K"]
    assert "| Examples | 2 train, 1 eval |" in card
    assert "| Left out by the split | 4 excluded" in card
    assert ", 1 orphaned |" in card
    assert "| ownership | Rust ownership, borrowing and lifetimes | 2 | 1 |" in card
    assert "| Parent model (answers) | deepseek/deepseek-r1 |" in card
    assert "answers scored by judge/model-1 from 1 to 10; those under 8 left out" in card
    assert "with `gsm8k.jsonl` left out" in card
    assert "split on 2026-12-03" in card
    assert "check its provider's terms" in card

    second = push(root, hub_env(tmp_path, hub.url))
    assert second.returncode == 0, second.stderr
    assert len(hub.calls("commit")) == 1  # nothing changed: no new commit


def test_a_license_and_a_repo_from_the_configuration(tmp_path: Path, hub: FakeHub) -> None:
    root = make_dataset(tmp_path / "project")
    with open(root / "overbrainer.toml", "a") as config:
        config.write('\n[hub]\ndataset_repo = "team/qa"\ndataset_license = "cc-by-4.0"\n')
    result = push(root, hub_env(tmp_path, hub.url), "--public")
    assert result.returncode == 0, result.stderr
    assert hub.calls("whoami") == []
    card = remote_card(hub, "datasets/team/qa")
    assert front(card)["license"] == "cc-by-4.0"
    assert "check its provider's terms" not in card
    assert json.loads((root / ".overbrainer" / "hub-dataset.json").read_text())["private"] is False


def test_a_bad_license_is_a_configuration_error(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "project")
    with open(root / "overbrainer.toml", "a") as config:
        config.write('\n[hub]\ndataset_license = "CC BY 4.0"\n')
    result = push(root, hub_env(tmp_path, None), "--dry-run")
    assert result.returncode == 2
    assert "hub.dataset_license: must be a Hub license ID such as `cc-by-4.0`" in result.stderr


def test_dry_run_sends_nothing_and_writes_the_card(tmp_path: Path, hub: FakeHub) -> None:
    root = make_dataset(tmp_path / "project")
    result = push(root, hub_env(tmp_path, hub.url, token=None), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "push: dataset <you>/my-project-data, private when created; nothing is sent (--dry-run)",
        "data/train.jsonl  0.0 MB",
        "data/eval.jsonl  0.0 MB",
        "push: 2 files, 0.0 MB; card written to .overbrainer/hub-dataset-README.md",
    ]
    assert hub.log() == []
    card = (root / ".overbrainer" / "hub-dataset-README.md").read_text()
    assert front(card)["license"] == "other"
    assert not (root / ".overbrainer" / "hub-dataset.json").exists()


def test_a_foreign_card_is_kept_unless_overwritten(tmp_path: Path, hub: FakeHub) -> None:
    root = make_dataset(tmp_path / "project")
    hub.control(repos={f"datasets/{REPO}": True}, cards={f"datasets/{REPO}": "# mine\n"})
    env = hub_env(tmp_path, hub.url)
    kept = push(root, env)
    assert kept.returncode == 0, kept.stderr
    assert kept.stdout.splitlines()[0] == (
        "kept the repo's own README.md (use --overwrite-card to replace it)"
    )
    assert commits(hub) == [["data/eval.jsonl", "data/train.jsonl"]]
    replaced = push(root, env, "--overwrite-card")
    assert replaced.returncode == 0, replaced.stderr
    assert commits(hub)[-1] == ["README.md"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL], ids=["ctrl_c", "kill_9"])
def test_an_interrupted_upload_resumes(
    tmp_path: Path, hub: FakeHub, signum: signal.Signals
) -> None:
    # Past the fake's 5 MB threshold each file goes through LFS, one upload at a time.
    big = example(1, pad=5_200_000)
    root = make_dataset(tmp_path / "project", train=big, eval_=example(2, pad=5_200_000))
    env = hub_env(tmp_path, hub.url)
    hub.control(hold={"upload": 1})  # train.jsonl is stored, eval.jsonl waits
    err = tmp_path / "err.txt"
    command = [sys.executable, "-m", "overbrainer", "-C", str(root), "push", "--dataset"]
    with open(err, "w") as stderr:
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=stderr)
    try:
        deadline = time.monotonic() + 60
        while len(hub.calls("upload")) < 2:
            assert time.monotonic() < deadline, err.read_text()
            time.sleep(0.05)
        process.send_signal(signum)
        code = process.wait(timeout=30)
    finally:
        process.kill()
        process.wait()
    if signum == signal.SIGINT:
        assert code == 130
        assert err.read_text().splitlines()[-1] == (
            "push cancelled: nothing was committed, run it again to resume"
        )
    else:
        assert code == -signal.SIGKILL
    assert hub.calls("commit") == []
    assert not (root / ".overbrainer" / "hub-dataset.json").exists()
    first = hub.calls("upload")[0]["path"]
    hub.control(hold={})
    rerun = push(root, env)
    assert rerun.returncode == 0, rerun.stderr
    assert commits(hub) == [FILES]
    assert [entry["path"] for entry in hub.calls("upload")].count(first) == 1


def test_the_model_card_links_the_pushed_dataset(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    make_run(root)
    env = hub_env(tmp_path, hub.url)
    assert push(root, env).returncode == 0
    model = subprocess.run(push_command(root), env=env, capture_output=True, text=True, timeout=90)
    assert model.returncode == 0, model.stderr
    card = remote_card(hub, "alice/my-project")
    assert front(card)["datasets"] == [REPO]
    assert f"The training data is on the Hub: [{REPO}]({hub.url}/datasets/{REPO})." in card


def test_the_model_card_has_no_dataset_before_one_is_pushed(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    make_run(root)
    result = subprocess.run(
        push_command(root, "--dry-run"),
        env=hub_env(tmp_path, hub.url, token=None),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode == 0, result.stderr
    card = (root / "runs" / "demo_20261203-120000" / "hub" / "README.md").read_text()
    assert "datasets" not in front(card)
    assert "training data is on the Hub" not in card


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ("train", "error: data/train.jsonl is missing: run `overbrainer split` first"),
        ("eval", "error: data/eval.jsonl is missing: run `overbrainer split` first"),
    ],
)
def test_a_project_without_its_split_is_refused(
    tmp_path: Path, hub: FakeHub, missing: str, message: str
) -> None:
    root = make_dataset(tmp_path / "project")
    (root / "data" / f"{missing}.jsonl").unlink()
    result = push(root, hub_env(tmp_path, hub.url))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [message]
    assert hub.log() == []


def test_an_empty_train_file_and_bad_arguments_are_refused(tmp_path: Path, hub: FakeHub) -> None:
    root = make_dataset(tmp_path / "project", train="")
    env = hub_env(tmp_path, hub.url)
    empty = push(root, env)
    assert (empty.returncode, empty.stderr.splitlines()) == (
        2,
        ["error: data/train.jsonl holds no example: nothing to push"],
    )
    bad_repo = push(root, env, "--repo", "no-slash")
    assert bad_repo.returncode == 2
    assert "`no-slash` is not a Hugging Face repo: use NAMESPACE/NAME" in bad_repo.stderr
    both = subprocess.run(
        [*push_command(root), "--dataset"], env=env, capture_output=True, text=True, timeout=90
    )
    assert both.returncode == 2
    assert "--dataset pushes the project's dataset: give it without RUN_ID" in both.stderr
    neither = subprocess.run(
        [sys.executable, "-m", "overbrainer", "-C", str(root), "push"],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert neither.returncode == 2
    assert "missing RUN_ID (or --dataset to push the project's dataset)" in neither.stderr
    assert hub.log() == []


def test_a_train_file_that_is_not_text_is_refused(tmp_path: Path, hub: FakeHub) -> None:
    root = make_dataset(tmp_path / "project")
    (root / "data" / "train.jsonl").write_bytes(b"\xff\xfe\n")
    result = push(root, hub_env(tmp_path, hub.url))
    assert (result.returncode, result.stderr.splitlines()) == (
        2,
        ["error: cannot read data/train.jsonl: not UTF-8 text"],
    )
    assert hub.log() == []
