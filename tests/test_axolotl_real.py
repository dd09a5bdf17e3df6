"""The real Axolotl trains the child through `overbrainer train`, on the CPU, then the trained
child is exported, compared and pushed: the whole loop, with nothing standing in but the
providers (the embedded stand-in) and the Hub (the loopback fake).

Marked `axolotl` and deselected by default (pyproject.toml): `pytest -m axolotl` (nox session
`axolotl`, and .ci/run) builds Axolotl's venv once (.ci/axolotl-venv.sh) and runs them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.axolotl_support import JOB_TIMEOUT, clean_env, training_project
from tests.hub_support import TOKEN, fake_hub
from tests.llama_support import LlamaRelease
from tests.sshd_support import ALIAS, Sshd, kill_jobs_under
from tests.train_helpers import overbrainer, record, run_ids, start, steps_logged, wait_for

pytestmark = pytest.mark.axolotl

CPU_LINE = "INFO target `{}` has no GPU: training on its CPU"


def assert_trained(result: subprocess.CompletedProcess[str], project: Path, target: str) -> str:
    """The one run succeeded, its steps and losses were followed; returns its ID."""
    assert result.returncode == 0, result.stderr[-6000:]
    assert CPU_LINE.format(target) in result.stderr
    (run_id,) = run_ids(project)
    assert record(project, run_id)["state"] == "succeeded"
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"train: run {run_id} succeeded; step ")
    assert " loss " in first and " eval_loss " in first
    followed = [line for line in result.stderr.splitlines() if " INFO train: step " in line]
    assert any(" loss " in line for line in followed)
    assert any(" eval_loss " in line for line in followed)
    return run_id


def assert_listed_and_logged(project: Path, env: dict[str, str], run_id: str, target: str) -> None:
    listed = overbrainer(project, env, "runs", "ls", timeout=60)
    assert listed.returncode == 0, listed.stderr
    (line,) = [line for line in listed.stdout.splitlines() if line.startswith(run_id)]
    assert line.split()[1:3] == ["succeeded", target]
    logs = overbrainer(project, env, "runs", "logs", run_id, timeout=60)
    assert logs.returncode == 0, logs.stderr
    assert "axolotl" in logs.stdout  # Axolotl's own log lines, from job.log


def test_a_venv_target_trains_stops_resumes_merges_then_exports_compares_and_pushes(
    tmp_path: Path,
    demo_dataset: Path,
    child_base: Path,
    axolotl_venv: Path,
    llama_release: LlamaRelease,
) -> None:
    target = f'[targets.local]\nkind = "local"\nruntime = "native"\nvenv = "{axolotl_venv}"\n'
    judge = '[roles.judge]\nprovider = "stub"\nmodel = "judge-model"\nmax_tokens = 256\n'
    hub = '[hub]\nrepo = "me/tiny-child"\n'
    project = training_project(
        demo_dataset,
        tmp_path / "p",
        child_base,
        adapter="lora",
        target="local",
        epochs=12,
        merge=True,
        extra_config=target + judge + hub,
    )
    env = clean_env(**release_env(llama_release, tmp_path))

    # Train, and stop it once it has logged a step: a snapshot a new run resumes from.
    err = tmp_path / "train.err"
    train = start(project, env, err, "train")
    try:

        def stepped() -> bool:
            ids = run_ids(project)
            assert train.poll() is None, err.read_text()[-6000:]
            return len(ids) == 1 and steps_logged(project, ids[0]) >= 1

        wait_for(stepped, timeout=300)
        (stopped,) = run_ids(project)
        stop = overbrainer(project, env, "train", "stop", stopped, timeout=300)
        assert stop.returncode == 0, stop.stderr[-4000:]
        out, _ = train.communicate(timeout=300)
    finally:
        if train.poll() is None:
            train.kill()
    assert train.returncode == 0, err.read_text()[-6000:]
    saved = record(project, stopped)
    assert saved["state"] == "stopped", saved
    snapshot = saved["snapshot"]
    assert isinstance(snapshot, dict)
    checkpoint = project / "runs" / stopped / str(snapshot["checkpoint"])
    assert (checkpoint / "optimizer.pt").is_file() and (checkpoint / "trainer_state.json").exists()
    assert f"train: run {stopped} stopped" in out

    resumed = overbrainer(project, env, "train", "--resume-from", stopped, timeout=JOB_TIMEOUT)
    assert resumed.returncode == 0, resumed.stderr[-6000:]
    (run_id,) = [r for r in run_ids(project) if r != stopped]
    assert record(project, run_id)["resumed_from"] == stopped
    assert record(project, run_id)["state"] == "succeeded"
    lines = resumed.stdout.splitlines()
    assert lines[0].startswith(f"train: run {run_id} succeeded; step ")
    assert lines[-1] == f"train: merged model in runs/{run_id}/output/merged"
    merged = project / "runs" / run_id / "output" / "merged"
    assert (merged / "config.json").is_file()
    assert list(merged.glob("*.safetensors"))
    assert_listed_and_logged(project, env, run_id, "local")

    # The trained child, exported with the real llama.cpp tools.
    exported = overbrainer(
        project, env, "export", run_id, "--quantize", "Q8_0", timeout=JOB_TIMEOUT
    )
    assert exported.returncode == 0, exported.stderr[-6000:]
    ggufs = list((project / "runs" / run_id / "output" / "gguf").glob("*.gguf"))
    assert len(ggufs) == 1 and ggufs[0].read_bytes()[:4] == b"GGUF"

    # Compared with the parent by the embedded stand-in judge, the child served by llama-server.
    compared = overbrainer(project, env, "compare", "--run", run_id, timeout=JOB_TIMEOUT)
    assert compared.returncode == 0, compared.stderr[-6000:]
    (report,) = (project / "runs" / run_id / "compares").glob("*/compare.json")
    verdicts = json.loads(report.read_text())
    assert "judge_usage" in verdicts

    # Pushed to the (fake) Hub: one commit with the model and its card.
    with fake_hub(tmp_path) as hub_server:
        push_env = {
            **env,
            "OVERBRAINER_HF_TOKEN": TOKEN,
            "OVERBRAINER_HUB__BASE_URL": hub_server.url,
            "HF_HUB_DISABLE_XET": "1",
            "HOME": str(tmp_path / "home"),
        }
        pushed = overbrainer(project, push_env, "push", run_id, timeout=JOB_TIMEOUT)
        assert pushed.returncode == 0, pushed.stderr[-6000:]
        commits = hub_server.calls("commit")
    assert len(commits) == 1
    assert any(name.endswith(".gguf") for name in json.dumps(commits[0]).split('"'))
    assert "README.md" in json.dumps(commits[0])


def release_env(release: LlamaRelease, tmp_path: Path) -> dict[str, str]:
    """The loopback llama.cpp release and a fresh tools cache for export and compare."""
    return {**release.env(), "OVERBRAINER_CACHE": str(tmp_path / "cache")}


def test_a_native_target_finds_axolotl_on_path_and_trains_a_qlora_adapter(
    tmp_path: Path, demo_dataset: Path, child_base: Path, axolotl_venv: Path
) -> None:
    project = training_project(
        demo_dataset,
        tmp_path / "p",
        child_base,
        adapter="qlora",
        target="local",
        extra_config='[targets.local]\nkind = "local"\nruntime = "native"\n',
    )
    env = clean_env()
    env["PATH"] = f"{axolotl_venv / 'bin'}:{env['PATH']}"
    check = overbrainer(project, env, "config", "check", timeout=60)
    assert f"native, axolotl at {axolotl_venv / 'bin' / 'axolotl'}" in check.stdout + check.stderr
    result = overbrainer(project, env, "train", timeout=JOB_TIMEOUT)
    run_id = assert_trained(result, project, "local")
    assert result.stdout.splitlines()[-1] == f"train: adapter in runs/{run_id}/output"
    assert (project / "runs" / run_id / "output" / "adapter_config.json").is_file()
    assert_listed_and_logged(project, env, run_id, "local")


def test_an_ssh_target_trains_a_full_fine_tune_with_axolotls_venv_on_the_remote_side(
    tmp_path: Path, demo_dataset: Path, child_base: Path, axolotl_venv: Path, sshd: Sshd
) -> None:
    remote = tmp_path / "remote"
    target = (
        f'[targets.box]\nkind = "ssh"\nruntime = "native"\nvenv = "{axolotl_venv}"\n'
        f'workdir = "{remote}"\n'
    )
    project = training_project(
        demo_dataset,
        tmp_path / "p",
        child_base,
        adapter="full",
        target="box",
        extra_config=target,
    )
    env = clean_env(
        OVERBRAINER_TARGETS__BOX__HOST=ALIAS, OVERBRAINER_SSH_CONFIG=str(sshd.client_config)
    )
    try:
        result = overbrainer(project, env, "train", timeout=JOB_TIMEOUT)
    finally:
        kill_jobs_under(remote)
    run_id = assert_trained(result, project, "box")
    assert result.stdout.splitlines()[-1] == f"train: model in runs/{run_id}/output"
    output = project / "runs" / run_id / "output"
    assert (output / "config.json").is_file() and list(output.glob("*.safetensors"))
    assert_listed_and_logged(project, env, run_id, "box")


def test_overbrainer_installs_into_axolotls_environment_without_changing_it(
    tmp_path: Path, axolotl_venv: Path
) -> None:
    repo = Path(__file__).resolve().parent.parent
    # What `pip install overbrainer` into Axolotl's venv would do: only add packages.
    report = tmp_path / "report.json"
    pip = str(axolotl_venv / "bin" / "pip")
    dry = subprocess.run(
        [pip, "install", "--quiet", "--dry-run", "--report", str(report), str(repo)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert dry.returncode == 0, dry.stderr[-4000:]
    installed = subprocess.run(
        [pip, "list", "--format=json"],
        capture_output=True,
        text=True,
        check=True,
    )
    versions = {canonical(p["name"]): p["version"] for p in json.loads(installed.stdout)}
    planned = json.loads(report.read_text())["install"]
    changed = [
        f"{item['metadata']['name']} {versions[name]} -> {item['metadata']['version']}"
        for item in planned
        if (name := canonical(item["metadata"]["name"])) in versions
    ]
    assert changed == []
    # And really installed: a venv that sees Axolotl's packages (a .pth file), so the install
    # lands beside them without touching the cache; Axolotl and transformers still import.
    overlay = tmp_path / "overlay"
    subprocess.run([sys.executable, "-m", "venv", str(overlay)], check=True)
    site = next((overlay / "lib").glob("python3*/site-packages"))
    axolotl_site = next((axolotl_venv / "lib").glob("python3*/site-packages"))
    (site / "axolotl_env.pth").write_text(f"{axolotl_site}\n")
    done = subprocess.run(
        [str(overlay / "bin" / "python"), "-m", "pip", "install", str(repo)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "uninstall" not in done.stdout.lower()
    imported = subprocess.run(
        [str(overlay / "bin" / "python"), "-c", IMPORTS],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert imported.returncode == 0, imported.stderr[-4000:]
    assert imported.stdout.split() == ["ok", versions["huggingface-hub"]]
    version = subprocess.run(
        [str(overlay / "bin" / "overbrainer"), "--version"], capture_output=True, text=True
    )
    assert version.returncode == 0 and version.stdout.startswith("overbrainer")


def canonical(name: str) -> str:
    """A distribution name as pip compares them."""
    return name.lower().replace("_", "-").replace(".", "-")


IMPORTS = (
    "import transformers, axolotl, peft, huggingface_hub, overbrainer.hub.client; "
    "print('ok', huggingface_hub.__version__)"
)
