"""`[hub] after_training`: a run that succeeded is pushed; a failed push only warns."""

from __future__ import annotations

import collections.abc
import json
import signal
import time
from pathlib import Path

import pytest

from tests.hub_support import TOKEN, FakeHub, fake_hub, hub_env
from tests.train_helpers import (
    kill_jobs,
    make_project,
    only_run,
    overbrainer,
    standin_env,
    start,
)

pytestmark = pytest.mark.hub


@pytest.fixture
def project(tmp_path: Path) -> collections.abc.Iterator[Path]:
    root = make_project(tmp_path / "project")
    with open(root / "overbrainer.toml", "a") as config:
        config.write('\n[hub]\nafter_training = true\nrepo = "alice/child"\n')
    yield root
    kill_jobs(root)


@pytest.fixture
def hub(tmp_path: Path) -> collections.abc.Iterator[FakeHub]:
    with fake_hub(tmp_path) as running:
        yield running


def env_for(tmp_path: Path, hub: FakeHub, token: str | None) -> dict[str, str]:
    env = standin_env(tmp_path / "bin")
    hub_vars = hub_env(tmp_path, hub.url, token)
    env.update({k: v for k, v in hub_vars.items() if k.startswith(("OVERBRAINER_HF", "HF_"))})
    env.update(OVERBRAINER_HUB__BASE_URL=hub.url, HOME=hub_vars["HOME"])
    return env


def test_a_succeeded_run_is_pushed_after_training(
    project: Path, tmp_path: Path, hub: FakeHub
) -> None:
    result = overbrainer(project, env_for(tmp_path, hub, TOKEN), "train", timeout=120)
    assert result.returncode == 0, result.stderr
    run_id = only_run(project)
    pushed = json.loads((project / "runs" / run_id / "hub" / "push.json").read_text())
    assert pushed["repo"] == "alice/child"
    assert result.stdout.splitlines()[-1].startswith("push: ")
    assert len(hub.calls("commit")) == 1
    assert TOKEN not in result.stdout + result.stderr
    again = overbrainer(project, env_for(tmp_path, hub, TOKEN), "train", "attach", run_id)
    assert again.returncode == 0, again.stderr
    assert len(hub.calls("commit")) == 1  # already pushed: attaching again pushes nothing


def test_ctrl_c_during_the_push_after_training(project: Path, tmp_path: Path, hub: FakeHub) -> None:
    hub.control(hold={"upload": 0})  # the uploads wait: the signal comes before the commit
    err = tmp_path / "err.txt"
    process = start(project, env_for(tmp_path, hub, TOKEN), err, "train")
    try:
        deadline = time.monotonic() + 120
        while not hub.calls("upload"):
            assert time.monotonic() < deadline, err.read_text()
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 130
    finally:
        process.kill()
        process.wait()
    run_id = only_run(project)
    assert err.read_text().splitlines()[-1] == (
        f"push cancelled before its commit finished; run it again with: overbrainer push {run_id}"
    )
    assert hub.calls("commit") == []
    assert json.loads((project / "runs" / run_id / "run.json").read_text())["state"] == (
        "succeeded"
    )


def test_without_a_token_training_warns_and_the_push_only_warns(
    project: Path, tmp_path: Path, hub: FakeHub
) -> None:
    result = overbrainer(project, env_for(tmp_path, hub, None), "train", timeout=120)
    assert result.returncode == 0, result.stderr
    run_id = only_run(project)
    assert (
        "[hub] after_training is set but OVERBRAINER_HF_TOKEN is not: the push after training "
        "will fail"
    ) in result.stderr
    assert (
        "push failed: OVERBRAINER_HF_TOKEN is not set: a Hugging Face token with write access "
        f"is needed to push; run it again with: overbrainer push {run_id}"
    ) in result.stderr
    assert hub.log() == []
    # The push's failure is its own: the run stays what its training was.
    assert json.loads((project / "runs" / run_id / "run.json").read_text())["state"] == (
        "succeeded"
    )
    assert result.stdout.splitlines()[0].startswith(f"train: run {run_id} succeeded; ")
    # The card of a real (stand-in) run: the table comes from its axolotl.yaml, data, metrics.
    dry = overbrainer(project, env_for(tmp_path, hub, None), "push", run_id, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    card = (project / "runs" / run_id / "hub" / "README.md").read_text().splitlines()
    assert (
        "Qwen/Qwen3-4B fine-tuned (QLoRA) on 1 question answered by deepseek/deepseek-r1." in card
    )
    table = card[card.index("| | |") : card.index("| | |") + 12]
    assert table[2:11] == [
        "| Parent model | deepseek/deepseek-r1 |",
        "| Generator model | qwen/qwen3-235b-a22b |",
        "| Base model | Qwen/Qwen3-4B |",
        "| Adapter | QLoRA |",
        "| Examples | 1 train, 1 eval |",
        "| Epochs | 3 |",
        "| Learning rate | 0.0002 |",
        "| Sequence length | 4096 |",
        "| Final loss | 1.00 train, 0.05 eval |",
    ]
    assert table[11].startswith("| Training time | ")
    assert card[-1] == "<!-- overbrainer:card -->"
