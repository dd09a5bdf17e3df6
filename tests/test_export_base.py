"""`overbrainer export RUN --base`: the run's base model to GGUF, through the real command on the
local target, with the stand-in converter (tests/export_standin.py; the real conversion of a
base model is in test_export_gguf.py).

The base model is a directory (as the tests' runs name it) or a Hub ID, downloaded by the job's
`huggingface_hub` from a loopback Hub (tests/hub_model_fake.py) through `HF_ENDPOINT`.
"""

from __future__ import annotations

import collections.abc
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from overbrainer.compare.plan import pick_run
from overbrainer.export.record import BASE, latest_export, read_export_record
from overbrainer.training.run_store import Runs, RunState
from tests.container_support import calls, install_engines, kill_containers, run_options
from tests.export_standin import GGUF, standin_export_env, standin_release
from tests.export_support import add_run
from tests.hub_model_fake import SHA, hub_model, requests
from tests.hub_support import FakeHub, hub_env
from tests.llama_support import TEST_TAG, LlamaRelease
from tests.test_export_command import refused
from tests.train_helpers import command, kill_jobs, make_project, overbrainer, wait_for

RUN = "my_project_20261203-120000"
BASE_GGUF = f"output/gguf/{RUN}-base-Q8_0.gguf"
CHILD_GGUF = f"output/gguf/{RUN}-Q8_0.gguf"
TOKEN = "hf_BaseDownloadToken0123"


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


@pytest.fixture
def base_model(tmp_path: Path) -> Path:
    """A base model directory (what a run's `base_model` names)."""
    folder = tmp_path / "base-model"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llama"}\n')
    (folder / "model.safetensors").write_bytes(b"base weights")
    return folder


def set_base(run_dir: Path, base: str | None) -> None:
    """Make the run's axolotl.yaml name `base` as its base_model (None: name none)."""
    config = run_dir / "axolotl.yaml"
    lines = [line for line in config.read_text().splitlines() if not line.startswith("base_model")]
    head = [] if base is None else [f"base_model: {base}"]
    config.write_text("\n".join(head + lines) + "\n")


def test_the_base_model_of_a_failed_run_is_exported_beside_the_child(
    project: Path, tmp_path: Path, release: LlamaRelease, base_model: Path
) -> None:
    child = tmp_path / "child"
    child.mkdir()
    (child / "config.json").write_text("{}")
    run_dir = add_run(project, child, state=RunState.FAILED)
    set_base(run_dir, str(base_model))
    converted = tmp_path / "converted.txt"
    env = standin_export_env(tmp_path, release, STANDIN_CONVERTED=str(converted))
    done = overbrainer(project, env, "export", RUN, "--base", "--quantize", "Q8_0", "--json")
    assert done.returncode == 0, done.stderr
    assert converted.read_text() == f"{base_model}\n"  # the base model, where the run names it
    document = json.loads(done.stdout)
    [job] = (run_dir / "exports").iterdir()
    record = read_export_record(job / "export.json")
    assert document["export"] == {
        "run_id": RUN,
        "model": "base",
        "gguf": f"runs/{RUN}/{BASE_GGUF}",
        "size_bytes": len(GGUF),
        "sha256": record.sha256,
        "quantize": "Q8_0",
        "llama_cpp": TEST_TAG,
        "modelfile": None,
        "ollama_name": None,
        "ollama_created": False,
    }
    assert json.loads((job / "export.json").read_text())["model"] == "base"
    assert (run_dir / BASE_GGUF).read_bytes() == GGUF
    assert not (run_dir / "output" / "gguf" / "Modelfile").exists()
    assert latest_export(run_dir) is None  # never the child's
    found = latest_export(run_dir, BASE)
    assert found is not None and found.file == BASE_GGUF
    lines = done.stderr.splitlines()
    assert (
        f"INFO export: {job.name}: the base model {base_model} of run {RUN} to GGUF Q8_0 on "
        "target `local`" in done.stderr
    )
    assert lines[-1] == (
        f"export: the base model's GGUF in runs/{RUN}/{BASE_GGUF} (Q8_0, 0.0 MB)"
    ), done.stderr
    assert json.loads((job / "run.json").read_text())["state"] == "succeeded"


def test_push_compare_and_an_in_job_delivery_keep_to_the_child(
    project: Path, tmp_path: Path, release: LlamaRelease, base_model: Path, hub: FakeHub
) -> None:
    child = tmp_path / "child"
    child.mkdir()
    (child / "config.json").write_text("{}")
    run_dir = add_run(project, child)
    set_base(run_dir, str(base_model))
    env = standin_export_env(tmp_path, release)
    for args in ((), ("--base",)):  # the child first: the base's export is the newer
        done = overbrainer(project, env, "export", RUN, "--quantize", "Q8_0", *args)
        assert done.returncode == 0, done.stderr
    assert (
        (run_dir / "output" / "gguf" / "Modelfile")
        .read_text()
        .startswith(f"FROM ./{RUN}-Q8_0.gguf\n")
    )
    _, export = pick_run(Runs(project / "runs"), RUN)
    assert (export.file, export.model) == (CHILD_GGUF, "child")
    _, export = pick_run(Runs(project / "runs"), None)
    assert export.file == CHILD_GGUF
    # A push sends the child's GGUF and Modelfile, never the base's.
    pushed = subprocess.run(
        command(project, "push", RUN, "--dry-run"),
        env=hub_env(tmp_path / "home", hub.url, token=None),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert pushed.returncode == 0, pushed.stderr
    listed = pushed.stdout.splitlines()[1:-1]
    assert [line.split()[0] for line in listed] == ["Modelfile", "config.json", f"{RUN}-Q8_0.gguf"]
    assert "base" not in pushed.stdout
    # The in-job delivery of a training's export never takes the base's GGUF for its own.
    from overbrainer.export.deliver import newest_gguf

    (run_dir / CHILD_GGUF).unlink()
    assert newest_gguf(run_dir, RUN) is None


def test_a_hub_base_model_is_downloaded_on_the_target_with_the_token(
    project: Path, tmp_path: Path, release: LlamaRelease, base_model: Path
) -> None:
    run_dir = add_run(project, base_model)
    set_base(run_dir, "acme/tiny-base")
    converted = tmp_path / "converted.txt"
    hf_home = tmp_path / "hf-home"
    with hub_model(tmp_path, base_model, "acme/tiny-base") as (url, log):
        env = standin_export_env(
            tmp_path,
            release,
            STANDIN_HUB="1",
            STANDIN_CONVERTED=str(converted),
            HF_ENDPOINT=url,
            HF_HOME=str(hf_home),
            HF_HUB_DISABLE_XET="1",
            OVERBRAINER_HF_TOKEN=TOKEN,
        )
        env.pop("HF_TOKEN", None)
        done = overbrainer(project, env, "export", RUN, "--base", "--quantize", "Q8_0")
        seen = requests(log)
    assert done.returncode == 0, done.stderr
    snapshot = hf_home / "hub" / "models--acme--tiny-base" / "snapshots" / SHA
    assert converted.read_text() == f"{snapshot}\n"  # in the target's Hugging Face cache
    assert (snapshot / "model.safetensors").read_bytes() == b"base weights"
    downloads = [entry for entry in seen if "/resolve/" in entry["path"]]
    assert {entry["path"].rsplit("/", 1)[-1] for entry in downloads} == {
        "config.json",
        "model.safetensors",
    }
    assert all(entry["authorization"] == f"Bearer {TOKEN}" for entry in downloads)
    [job] = (run_dir / "exports").iterdir()
    job_log = (job / "job.log").read_text()
    assert "export: fetching the base model acme/tiny-base from the Hugging Face Hub" in job_log
    assert TOKEN not in done.stdout + done.stderr + job_log
    assert done.stdout.splitlines() == [
        f"export: the base model's GGUF in runs/{RUN}/{BASE_GGUF} (Q8_0, 0.0 MB)"
    ]


def test_a_hub_base_model_that_cannot_be_downloaded_fails_with_one_line(
    project: Path, tmp_path: Path, release: LlamaRelease, base_model: Path
) -> None:
    run_dir = add_run(project, base_model)
    set_base(run_dir, "acme/absent")
    with hub_model(tmp_path, base_model, "acme/tiny-base") as (url, _):
        env = standin_export_env(
            tmp_path, release, STANDIN_HUB="1", HF_ENDPOINT=url, HF_HOME=str(tmp_path / "hf")
        )
        done = overbrainer(project, env, "export", RUN, "--base")
    assert done.returncode == 1, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("error: export export_")
    assert f"of run {RUN} failed: cannot download the base model acme/absent from the Hugging " in (
        last
    )
    assert not (run_dir / "output" / "gguf").exists()


def test_a_target_python_without_huggingface_hub_fails_with_one_line(
    project: Path, tmp_path: Path, release: LlamaRelease, base_model: Path
) -> None:
    run_dir = add_run(project, base_model)
    set_base(run_dir, "acme/tiny-base")
    # The stand-in python3 answers the huggingface_hub check as a python3 without it.
    done = overbrainer(project, standin_export_env(tmp_path, release), "export", RUN, "--base")
    assert done.returncode == 1, done.stderr
    [job] = (run_dir / "exports").iterdir()
    assert done.stderr.splitlines()[-1] == (
        f"error: export {job.name} of run {RUN} failed: python3 lacks huggingface_hub, which "
        "the download of the base model acme/tiny-base needs"
    )
    assert json.loads((job / "run.json").read_text())["state"] == "failed"


def test_base_refusals(project: Path, tmp_path: Path, base_model: Path) -> None:
    run_dir = add_run(project, base_model, state=RunState.CANCELLED)
    assert refused(project, tmp_path, RUN, "--base", "--ollama", "me/base") == (
        "--ollama: not with --base (the base model's GGUF gets no Modelfile or Ollama model)"
    )
    set_base(run_dir, None)
    assert refused(project, tmp_path, RUN, "--base") == (
        f"runs/{RUN}/axolotl.yaml names no base_model: there is no base model to export"
    )
    (run_dir / "axolotl.yaml").unlink()
    assert refused(project, tmp_path, RUN, "--base") == (
        f"runs/{RUN}/axolotl.yaml is missing: the base model's export needs it"
    )


@pytest.mark.sigint
def test_ctrl_c_cancels_a_base_export_and_leaves_no_base_gguf(
    project: Path, tmp_path: Path, release: LlamaRelease, base_model: Path
) -> None:
    run_dir = add_run(project, base_model)
    env = standin_export_env(tmp_path, release)
    # A converter that writes the export's `.part` and hangs: an export in progress.
    (tmp_path / "bin" / "python3").write_text(
        (tmp_path / "bin" / "python3")
        .read_text()
        .replace(
            "*convert_hf_to_gguf.py)\n",
            '*convert_hf_to_gguf.py)\n    echo partial > "output/gguf/$OVERBRAINER_EXPORT_NAME-'
            '$OVERBRAINER_EXPORT_QUANTIZE.gguf.part"; exec sleep 600;;\n*never)\n',
        )
    )
    process = subprocess.Popen(
        command(project, "export", RUN, "--base", "--quantize", "F16"),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        part = "*/output/gguf/*-base-F16.gguf.part"
        wait_for(lambda: bool(list((run_dir / "exports").glob(part))))
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=90)
    assert process.returncode == 130, err
    [job] = (run_dir / "exports").iterdir()
    assert err.splitlines()[-1] == f"export {job.name} of run {RUN} was cancelled"
    assert json.loads((job / "run.json").read_text())["state"] == "cancelled"
    assert not list(job.rglob("*.part"))
    assert latest_export(run_dir, BASE) is None
    assert out == ""


def test_in_a_container_the_download_gets_the_token_by_name_and_the_mounted_hub_cache(
    project: Path, tmp_path: Path, release: LlamaRelease, base_model: Path
) -> None:
    run_dir = add_run(project, base_model)
    set_base(run_dir, "acme/tiny-base")
    toml = project / "overbrainer.toml"
    extra = 'runtime = "docker"\nengine = "docker"\nimage = "img:1"\n'
    toml.write_text(toml.read_text().replace('runtime = "native"           #', extra + "#", 1))
    state, seen = tmp_path / "engine", tmp_path / "seen.json"
    env = standin_export_env(
        tmp_path, release, STANDIN_SEEN=str(seen), STANDIN_HUB="1", OVERBRAINER_HF_TOKEN=TOKEN
    )
    env.update(install_engines(tmp_path / "bin", state))
    # The download (`python3 - <repo> <out> export`) stands in: it records what it sees and
    # leaves a model in the Hugging Face cache it was given.
    record = "import json, os; json.dump(dict(os.environ), open(os.environ['STANDIN_SEEN'], 'w'))"
    python = tmp_path / "bin" / "python3"
    python.write_text(
        python.read_text().replace(
            'case "$1" in\n',
            'case "$1" in\n-) if [ "$2" = acme/tiny-base ]; then cat > /dev/null\n'
            f'    {sys.executable} -c "{record}"\n'
            '    mkdir -p "$HF_HOME/snap" && echo "{}" > "$HF_HOME/snap/config.json"\n'
            '    printf %s "$HF_HOME/snap" > "$3"; exit 0; fi;;\n',
            1,
        )
    )
    try:
        done = overbrainer(project, env, "export", RUN, "--base", "--quantize", "Q8_0")
    finally:
        kill_containers(state)
    assert done.returncode == 0, done.stderr
    runs = (project / "runs").resolve()
    [job] = (run_dir / "exports").iterdir()
    [run] = [call["argv"] for call in calls(state) if call["argv"][0] == "run"]
    passed = run_options(run)["-e"]
    assert "HF_TOKEN" in passed  # by name: its value stays in the environment
    assert {"HF_HOME=/workspace/hf-cache", "OVERBRAINER_EXPORT_BASE=1"} <= set(passed)
    assert "OVERBRAINER_EXPORT_MODEL=acme/tiny-base" in passed
    inside = json.loads(seen.read_text())
    assert inside["HF_TOKEN"] == TOKEN
    assert inside["HF_HOME"] == f"{runs}/.hf-cache"  # the mounted cache training fills
    assert f"export: converting {runs}/.hf-cache/snap to GGUF" in (job / "job.log").read_text()
    assert (run_dir / BASE_GGUF).read_bytes() == GGUF
    everything = done.stdout + done.stderr + (state / "calls.jsonl").read_text()
    everything += "".join(p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file())
    assert TOKEN not in everything
