"""`overbrainer push` against the loopback fake Hub, through the real huggingface_hub."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from overbrainer.hub.card import duration, front_matter, scalar
from overbrainer.hub.errors import PushRefused
from overbrainer.hub.selection import repo_path, select_files
from overbrainer.targets.runpod.pod_record import PodRecord, PodState, save_pod_record
from tests.hub_support import (
    RUN_ID,
    TOKEN,
    FakeHub,
    hub_env,
    make_run,
    push_command,
)
from tests.ports import free_port

pytestmark = pytest.mark.hub

ALL_FILES = [
    "Modelfile",
    "README.md",
    "adapter_config.json",
    "adapter_model.safetensors",
    "demo_20261203-120000-Q4_K_M.gguf",
    "tokenizer.json",
]


def push(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        push_command(root, *args), env=env, capture_output=True, text=True, timeout=90
    )
    assert TOKEN not in result.stdout + result.stderr
    return result


def commits(hub: FakeHub) -> list[list[str]]:
    return [entry["commit"]["files"] for entry in hub.calls("commit")]


def test_first_push_uploads_everything_and_a_second_nothing_new(
    tmp_path: Path, hub: FakeHub
) -> None:
    root = tmp_path / "project"
    run_dir = make_run(root)
    env = hub_env(tmp_path, hub.url)
    first = push(root, env)
    assert first.returncode == 0, first.stderr
    record = json.loads((run_dir / "hub" / "push.json").read_text())
    assert record["repo"] == "alice/my-project"
    assert record["private"] is True
    assert sorted(record["files"]) == ALL_FILES
    assert first.stdout.splitlines() == [f"push: {record['url']} (6 files, 0.1 MB)"]
    assert record["url"].endswith(f"/alice/my-project/commit/{record['commit']}")
    assert commits(hub) == [ALL_FILES]
    uploads = hub.calls("upload")
    assert sorted(entry["bytes"] for entry in uploads) == [32768, 70004]
    assert "push: demo_20261203-120000 102.9 kB/102.9 kB" in first.stderr
    # Only our token was ever sent: never HF_TOKEN, never the token file.
    assert {entry["auth"] for entry in hub.log()} <= {f"Bearer {TOKEN}", ""}

    second = push(root, env)
    assert second.returncode == 0, second.stderr
    assert len(hub.calls("upload")) == 2
    assert len(hub.calls("commit")) == 1
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes()


def test_a_foreign_card_is_kept_unless_overwritten(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    make_run(root)
    hub.control(repos={"alice/my-project": True}, cards={"alice/my-project": "# my own card\n"})
    env = hub_env(tmp_path, hub.url)
    kept = push(root, env)
    assert kept.returncode == 0, kept.stderr
    assert kept.stdout.splitlines()[0] == (
        "kept the repo's own README.md (use --overwrite-card to replace it)"
    )
    assert commits(hub) == [[name for name in ALL_FILES if name != "README.md"]]
    replaced = push(root, env, "--overwrite-card")
    assert replaced.returncode == 0, replaced.stderr
    assert commits(hub)[-1] == ["README.md"]


def test_our_own_card_is_replaced(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    make_run(root)
    card = "old\n<!-- overbrainer:card -->\n"
    hub.control(repos={"alice/my-project": True}, cards={"alice/my-project": card})
    result = push(root, hub_env(tmp_path, hub.url))
    assert result.returncode == 0, result.stderr
    assert "README.md" in commits(hub)[0]


def test_a_private_push_into_a_public_repo_is_refused_first(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    make_run(root)
    hub.control(repos={"alice/my-project": False})
    result = push(root, hub_env(tmp_path, hub.url))
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "error: repo alice/my-project is public and this push is private: push with --public "
        "or set [hub] private = false"
    )
    assert [entry["call"] for entry in hub.log()] == ["whoami", "info"]
    public = push(root, hub_env(tmp_path, hub.url), "--public")
    assert public.returncode == 0, public.stderr


@pytest.mark.parametrize(
    ("call", "status", "message"),
    [
        (
            "whoami",
            401,
            "Hugging Face refused the token: set OVERBRAINER_HF_TOKEN to a valid token with "
            "write access",
        ),
        (
            "create",
            403,
            "the Hugging Face token needs write access to alice: set OVERBRAINER_HF_TOKEN to a "
            "token that has it",
        ),
        ("whoami", 429, "Hugging Face rate limit, retry later"),
        (
            "info",
            401,
            "Hugging Face refused the token: set OVERBRAINER_HF_TOKEN to a valid token with "
            "write access",
        ),
    ],
)
def test_hub_refusals_have_their_messages(
    tmp_path: Path, hub: FakeHub, call: str, status: int, message: str
) -> None:
    root = tmp_path / "project"
    make_run(root)
    hub.control(status={call: status})
    result = push(root, hub_env(tmp_path, hub.url))
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == f"error: {message}"
    assert hub.calls("commit") == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL], ids=["ctrl_c", "kill_9"])
def test_a_signal_during_the_upload_commits_nothing_and_a_rerun_completes(
    tmp_path: Path, hub: FakeHub, signum: signal.Signals
) -> None:
    root = tmp_path / "project"
    run_dir = make_run(root)
    env = hub_env(tmp_path, hub.url)
    hub.control(hold={"upload": 1})  # the first file is stored, the second waits
    err = tmp_path / "err.txt"
    with open(err, "w") as stderr:
        process = subprocess.Popen(
            push_command(root), env=env, stdout=subprocess.PIPE, stderr=stderr, text=True
        )
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
    assert not (run_dir / "hub" / "push.json").exists()
    first = hub.calls("upload")[0]["path"]
    hub.control(hold={})
    rerun = push(root, env)
    assert rerun.returncode == 0, rerun.stderr
    assert commits(hub) == [ALL_FILES]
    # The rerun resumed: what was stored before the signal was not sent again.
    assert [entry["path"] for entry in hub.calls("upload")].count(first) == 1


def test_dry_run_without_a_token_sends_nothing(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    run_dir = make_run(root)
    result = push(root, hub_env(tmp_path, hub.url, token=None), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "push: <you>/my-project, private when created; nothing is sent (--dry-run)",
        "Modelfile  0.0 MB",
        "adapter_config.json  0.0 MB",
        "adapter_model.safetensors  0.0 MB",
        "demo_20261203-120000-Q4_K_M.gguf  0.0 MB",
        "tokenizer.json  0.0 MB",
        f"push: 5 files, 0.1 MB; card written to runs/{RUN_ID}/hub/README.md",
    ]
    card = (run_dir / "hub" / "README.md").read_text()
    assert card.splitlines()[-1] == "<!-- overbrainer:card -->"
    assert "# <you>/my-project" in card
    assert hub.log() == []


def test_push_without_a_token_is_refused(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    make_run(root)
    result = push(root, hub_env(tmp_path, hub.url, token=None))
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "error: OVERBRAINER_HF_TOKEN is not set: a Hugging Face token with write access is "
        "needed to push"
    )
    assert hub.log() == []


def test_bad_repo_and_unpushable_runs(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    make_run(root, state="failed")
    env = hub_env(tmp_path, hub.url)
    bad = push(root, env, "--repo", "no-slash")
    assert bad.returncode == 2
    assert bad.stderr.splitlines()[-1] == (
        "error: `no-slash` is not a Hugging Face repo: use NAMESPACE/NAME"
    )
    failed = push(root, env)
    assert failed.returncode == 2
    assert failed.stderr.splitlines()[-1] == (
        f"error: run {RUN_ID} is failed: only a succeeded or stopped run can be pushed"
    )
    assert hub.log() == []


def test_repo_paths_are_pinned() -> None:
    assert repo_path("gguf/run-Q4_K_M.gguf") == "run-Q4_K_M.gguf"
    assert repo_path("gguf/Modelfile") == "Modelfile"
    assert repo_path("gguf/sub/x.gguf") == "sub/x.gguf"
    assert repo_path("merged/model.safetensors") == "merged/model.safetensors"
    assert repo_path("adapter_config.json") == "adapter_config.json"


def test_card_front_matter_is_pinned() -> None:
    assert front_matter("Qwen/Qwen3-4B", "qlora", "apache-2.0", True) == (
        "base_model: Qwen/Qwen3-4B\n"
        "base_model_relation: adapter\n"
        "library_name: peft\n"
        "license: apache-2.0\n"
        "pipeline_tag: text-generation\n"
        "tags:\n"
        "- overbrainer\n"
        "- distillation\n"
        "- gguf"
    )
    assert front_matter("/models/local", None, None, False) == (
        "library_name: transformers\n"
        "pipeline_tag: text-generation\n"
        "tags:\n"
        "- overbrainer\n"
        "- distillation"
    )
    assert scalar("yes") == '"yes"'
    assert scalar("1abc") == '"1abc"'
    assert scalar("llama3.2") == "llama3.2"


def test_a_public_push_into_a_private_repo_keeps_it_private(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    run_dir = make_run(root)
    hub.control(repos={"alice/my-project": True})
    result = push(root, hub_env(tmp_path, hub.url), "--public")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "repo alice/my-project exists and stays private"
    assert json.loads((run_dir / "hub" / "push.json").read_text())["private"] is True


def test_the_card_shows_a_compare_summary_when_one_exists(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    run_dir = make_run(root)
    compare = run_dir / "compares" / "compare_20261203-130000"
    compare.mkdir(parents=True)
    summary = {"questions": 20, "win_or_tie": 0.65, "latency_p50": 1.5}
    (compare / "compare.json").write_text(json.dumps({"summary": summary}))
    result = push(root, hub_env(tmp_path, hub.url, token=None), "--dry-run")
    assert result.returncode == 0, result.stderr
    card = (run_dir / "hub" / "README.md").read_text()
    assert (
        "## Compared with the parent\n\nThe child won or tied 65.0% of 20 judged questions " in card
    )


def test_a_hub_message_quoting_the_token_is_replaced(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    make_run(root)
    hub.control(status={"create": 400}, echo_auth=True)
    result = push(root, hub_env(tmp_path, hub.url))
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        "error: Hugging Face request failed (its message quoted the token and is not shown)"
    )


def test_ctrl_c_during_the_commit_lets_it_finish(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    run_dir = make_run(root)
    hub.control(hold={"commit": 0})
    process = subprocess.Popen(
        push_command(root),
        env=hub_env(tmp_path, hub.url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not hub.calls("commit"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        hub.control(hold={})  # the commit can answer only once the signal is sent
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
        process.wait()
    # The push is made, and the exit says a Ctrl-C came, as every command's does (130).
    assert process.returncode == 130
    assert "push: Ctrl-C came during the commit, which was let finish: it is made" in err
    assert TOKEN not in out + err
    assert (run_dir / "hub" / "push.json").exists()
    assert out.splitlines()[-1].startswith("push: ")


def test_training_time_is_pinned() -> None:
    assert duration(45) == "45 s"
    assert duration(360) == "6 min"
    assert duration(4800) == "1 h 20 min"


def test_an_unreachable_hub_is_a_clear_failure(tmp_path: Path) -> None:
    root = tmp_path / "project"
    make_run(root)
    port = free_port()
    result = push(root, hub_env(tmp_path, f"http://127.0.0.1:{port}"))
    assert result.returncode == 1
    last = result.stderr.splitlines()[-1]
    assert last == "error: cannot reach 127.0.0.1: connection refused", result.stderr


def test_file_selection_skips_what_is_not_the_model(tmp_path: Path) -> None:
    output = tmp_path / "output"
    for name in (
        "config.json",
        ".hidden/x",
        "sub/.dot",
        "checkpoint-10/model.bin",
        "sub/checkpoint-3/kept.bin",
        "debug.log",
        "sub/debug.log",
        "README.md",
        "gguf/README.md",
        "merged/model.safetensors",
        "gguf/run-Q4_K_M.gguf",
    ):
        (output / name).parent.mkdir(parents=True, exist_ok=True)
        (output / name).write_text(name)
    (output / "link.bin").symlink_to(output / "config.json")
    assert [item.repo_path for item in select_files(output)] == [
        "config.json",
        "merged/model.safetensors",
        "run-Q4_K_M.gguf",
        "sub/checkpoint-3/kept.bin",
        "sub/debug.log",
    ]
    (output / "gguf" / "config.json").write_text("twice")
    with pytest.raises(
        PushRefused, match="^config.json and gguf/config.json both map to config.json in the repo$"
    ):
        select_files(output)


def test_the_card_names_the_runpod_gpu_and_spend(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    run_dir = make_run(root)
    pod = PodRecord(RUN_ID, PodState.DELETED, gpu_type="NVIDIA A40", estimated_spend=1.234)
    save_pod_record(run_dir, pod)
    result = push(root, hub_env(tmp_path, hub.url, token=None), "--dry-run")
    assert result.returncode == 0, result.stderr
    card = (run_dir / "hub" / "README.md").read_text().splitlines()
    assert (
        "Trained on [Runpod](https://runpod.io?ref=ym24z23f) (NVIDIA A40) for about $1.23." in card
    )


def test_dry_run_with_a_token_only_asks_who_you_are(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    make_run(root)
    result = push(root, hub_env(tmp_path, hub.url), "--dry-run", "--public")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == (
        "push: alice/my-project, public when created; nothing is sent (--dry-run)"
    )
    assert [entry["call"] for entry in hub.log()] == ["whoami"]


@pytest.mark.parametrize(
    ("files", "state", "snapshot", "message"),
    [
        ({}, "succeeded", False, None),
        (
            {"checkpoint-7/adapter_model.safetensors": b"x"},
            "stopped",
            True,
            f"run {RUN_ID} has no model in output/ (only checkpoint checkpoint-7): "
            "export or resume it first",
        ),
        (
            {"notes.txt": b"x"},
            "succeeded",
            False,
            f"runs/{RUN_ID}/output holds no model: nothing to push",
        ),
        (
            {"config.json": b"{}", "checkpoint-7/x": b"x", ".hidden": b"x"},
            "stopped",
            False,
            None,
        ),
    ],
)
def test_runs_without_a_model_are_refused(
    tmp_path: Path,
    hub: FakeHub,
    files: dict[str, bytes],
    state: str,
    snapshot: bool,
    message: str | None,
) -> None:
    root = tmp_path / "project"
    run_dir = make_run(root, files, state=state)
    record = json.loads((run_dir / "run.json").read_text())
    if snapshot:
        record["snapshot"] = {"checkpoint": "output/checkpoint-7", "step": 7, "reason": "requested"}
    (run_dir / "run.json").write_text(json.dumps(record))
    if not files:
        assert not (run_dir / "output").exists()
        message = (
            f"the results of run {RUN_ID} were not retrieved: retrieve them with "
            f"`overbrainer train attach {RUN_ID}`, then push"
        )
    result = push(root, hub_env(tmp_path, hub.url), "--dry-run")
    if message is None:
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines()[1:] == [
            "config.json  0.0 MB",
            f"push: 1 file, 0.0 MB; card written to runs/{RUN_ID}/hub/README.md",
        ]
        return
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == f"error: {message}"
    assert hub.log() == []


def test_a_model_with_nothing_else_to_push_is_refused(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    make_run(root, {"config.json": b"{}"})
    (root / "runs" / RUN_ID / "output" / "config.json").unlink()
    (root / "runs" / RUN_ID / "output" / "adapter_config.json").symlink_to("../run.json")
    result = push(root, hub_env(tmp_path, hub.url), "--dry-run")
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (f"error: run {RUN_ID} has nothing to push in output/")


def test_the_client_speaks_the_http_package_of_the_installed_library() -> None:
    import huggingface_hub

    from overbrainer.hub.client import _client, http_package

    major = int(huggingface_hub.__version__.split(".")[0])
    assert http_package().__name__ == ("httpx2" if major >= 2 else "httpx")
    client = _client()
    try:
        assert isinstance(client, http_package().Client)
        assert client.timeout.connect == 10.0
        assert client.timeout.read is None
    finally:
        client.close()
