"""`overbrainer export` end to end on the local target: a real conversion and quantization.

A tiny random Llama model (tests/export_support.py) stands in for a run's `output/`; the
llama.cpp tools come from the `llama_release` fixture, so export.sh fetches, verifies and
unpacks them through its own path. Needs torch: run with `pytest -m gguf` (CI's torch step).
"""

from __future__ import annotations

import collections.abc
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from overbrainer.export.record import BASE, latest_export
from overbrainer.training.run_store import RunState, Snapshot
from tests.container_support import (
    calls,
    install_engines,
    kill_containers,
    run_options,
)
from tests.export_support import GGUF_PARTS, add_run, gguf_reader
from tests.hub_model_fake import SHA, hub_model
from tests.llama_support import LlamaRelease, LlamaTools
from tests.ports import free_port
from tests.sshd_support import ALIAS, Sshd, kill_jobs_under
from tests.tiny_model import SEQUENCE_LEN, make_tiny_model
from tests.train_helpers import (
    command,
    group_alive,
    kill_jobs,
    make_project,
    overbrainer,
    standin_env,
    wait_for,
)

pytestmark = [pytest.mark.gguf, GGUF_PARTS]
RUN = "my_project_20261203-120000"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture
def project(tmp_path: Path) -> collections.abc.Iterator[Path]:
    root = make_project(tmp_path / "p")
    yield root
    kill_jobs(root)


def env_for(tmp_path: Path, release: LlamaRelease, **extra: str) -> dict[str, str]:
    env = standin_env(tmp_path / "bin")
    env.update(release.env())
    env.update(extra)
    return env


def only_export(run_dir: Path) -> Path:
    found = sorted((run_dir / "exports").iterdir())
    assert len(found) == 1, found
    return found[0]


def left_behind(run_dir: Path) -> list[str]:
    """Work files an export must never leave: `.part` files, its work dir, staged files."""
    names = []
    for path in run_dir.rglob("*"):
        if path.name.endswith(".part") or path.name == "export-work":
            names.append(str(path.relative_to(run_dir)))
    for job in (run_dir / "exports").glob("*"):
        for staged in ("output/config.json", "axolotl.yaml"):
            if (job / staged).exists():
                names.append(str((job / staged).relative_to(run_dir)))
    return names


def test_q4_k_m_export_of_a_full_model_converts_quantizes_and_delivers(
    project: Path,
    tiny_model: Path,
    llama_release: LlamaRelease,
    llama_tools: LlamaTools,
    tmp_path: Path,
) -> None:
    run_dir = add_run(project, tiny_model)
    env = env_for(tmp_path, llama_release)
    result = overbrainer(project, env, "export", RUN, timeout=300)
    assert result.returncode == 0, result.stderr
    gguf_path = run_dir / "output" / "gguf" / f"{RUN}-Q4_K_M.gguf"
    size = gguf_path.stat().st_size
    from overbrainer.model.sizes import format_size

    assert result.stdout.splitlines() == [
        f"export: GGUF in runs/{RUN}/output/gguf/{RUN}-Q4_K_M.gguf (Q4_K_M, "
        f"{format_size(size)}), Modelfile beside it",
        f"export: run it with Ollama after `cd runs/{RUN}/output/gguf && ollama create {RUN} "
        "-f Modelfile`",
    ]
    job = only_export(run_dir)
    assert job.name.startswith("export_")
    assert f"INFO export: {job.name}: runs/{RUN}/output to GGUF Q4_K_M on target `local`" in (
        result.stderr
    )
    record = json.loads((job / "run.json").read_text())
    assert record["state"] == "succeeded"
    exported = json.loads((job / "export.json").read_text())
    assert list(exported) == ["quantize", "llama_cpp", "file", "sha256", "size", "created"]
    assert exported["quantize"] == "Q4_K_M"
    assert exported["llama_cpp"] == llama_release.tag
    assert exported["file"] == f"output/gguf/{RUN}-Q4_K_M.gguf"
    assert exported["size"] == size
    assert (run_dir / "output" / "gguf" / "Modelfile").read_text() == (
        f"FROM ./{RUN}-Q4_K_M.gguf\nPARAMETER num_ctx {SEQUENCE_LEN}\n"
    )
    log = (job / "job.log").read_text()
    assert "export: fetching the llama.cpp b0test source" in log
    assert "export: fetching llama.cpp b0test ubuntu-x64" in log
    assert "export: quantizing to Q4_K_M" in log
    assert left_behind(run_dir) == []
    # The tools are cached on the target: runs/.cache/llama.cpp/<tag>/.
    cache = project / "runs" / ".cache" / "llama.cpp" / llama_release.tag
    assert (cache / "source" / "convert_hf_to_gguf.py").is_file()
    assert (cache / "ubuntu-x64" / "llama-quantize").is_file()
    assert sorted(p.name for p in cache.iterdir()) == ["source", "ubuntu-x64"]

    reader = gguf_reader(str(gguf_path))
    fields = reader.fields
    arch = bytes(fields["general.architecture"].parts[-1]).decode()
    assert arch == "llama"
    assert "tokenizer.chat_template" in fields
    template = bytes(fields["tokenizer.chat_template"].parts[-1]).decode()
    assert "add_generation_prompt" in template
    assert len(reader.tensors) == 2 * 9 + 3  # 9 per layer, embeddings, norm, output
    assert int(fields["general.file_type"].parts[-1][0]) == 15  # MOSTLY_Q4_K_M

    # A second export reuses the cache: nothing fetched again.
    again = overbrainer(project, env, "export", RUN, "--quantize", "F16", timeout=300)
    assert again.returncode == 0, again.stderr
    second = [j for j in (run_dir / "exports").iterdir() if j != job]
    assert len(second) == 1
    log2 = (second[0] / "job.log").read_text()
    assert "fetching" not in log2
    assert "quantizing" not in log2  # F16 skips llama-quantize
    f16 = gguf_reader(str(run_dir / "output" / "gguf" / f"{RUN}-F16.gguf"))
    assert int(f16.fields["general.file_type"].parts[-1][0]) == 1  # MOSTLY_F16

    _generate(llama_tools, gguf_path)


def _generate(tools: LlamaTools, model: Path) -> None:
    """Load the GGUF in the built llama-server and ask it for a few tokens."""
    import urllib.request

    port = free_port()
    server = subprocess.Popen(
        [
            str(tools.bin / "llama-server"),
            "-m",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "-c",
            "256",
            "-np",
            "1",
            "--no-webui",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert server.poll() is None, "llama-server exited"
            assert time.monotonic() < deadline, "llama-server was not ready"
            time.sleep(0.3)
        body = json.dumps({"prompt": "the quick brown", "n_predict": 4}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/completion", body, {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
        assert answer["tokens_predicted"] == 4
    finally:
        server.terminate()
        server.wait(timeout=20)


def test_an_adapter_is_merged_with_axolotl_merge_lora_first(
    project: Path, tiny_model: Path, llama_release: LlamaRelease, tmp_path: Path
) -> None:
    run_dir = add_run(project, tiny_model, adapter=True)
    trace = tmp_path / "axolotl.log"
    env = env_for(tmp_path, llama_release, STANDIN_LOG=str(trace), STANDIN_KEEP_MERGE="1")
    result = overbrainer(project, env, "export", RUN, "--quantize", "Q8_0", timeout=300)
    assert result.returncode == 0, result.stderr
    assert (run_dir / "output" / "gguf" / f"{RUN}-Q8_0.gguf").is_file()
    assert [json.loads(line) for line in trace.read_text().splitlines()] == [
        ["merge-lora", "export-work/merge.yaml"]
    ]
    import yaml

    merge = yaml.safe_load((tmp_path / "merge.yaml").read_text())
    assert merge["output_dir"] == "export-work"
    assert merge["lora_model_dir"] == "../../output"
    assert merge["base_model"] == str(tiny_model)
    assert merge["sequence_len"] == SEQUENCE_LEN
    for dropped in ("plugins", "resume_from_checkpoint", "hub_model_id", "hub_strategy"):
        assert dropped not in merge
    assert (
        "export: merging the adapter in ../../output"
        in (only_export(run_dir) / "job.log").read_text()
    )
    assert left_behind(run_dir) == []


def test_a_wrong_sha256_is_refused_and_nothing_is_used_or_cached(
    project: Path, tiny_model: Path, llama_release: LlamaRelease, tmp_path: Path
) -> None:
    run_dir = add_run(project, tiny_model)
    bad = "0" * 64
    env = env_for(tmp_path, llama_release, OVERBRAINER_LLAMA_CPP_SOURCE_SHA256=bad)
    result = overbrainer(project, env, "export", RUN, timeout=300)
    assert result.returncode == 1
    job = only_export(run_dir)
    url = f"{llama_release.url}/archive/refs/tags/{llama_release.tag}.tar.gz"
    message = f"{url} has SHA-256 {llama_release.source_sha256}, expected {bad}: not used"
    assert result.stderr.splitlines()[-1] == (
        f"error: export {job.name} of run {RUN} failed: {message}"
    )
    cache = project / "runs" / ".cache" / "llama.cpp" / llama_release.tag
    assert list(cache.iterdir()) == []
    assert not (run_dir / "output" / "gguf").exists() or not list(
        (run_dir / "output" / "gguf").glob("*.gguf")
    )
    assert json.loads((job / "run.json").read_text())["state"] == "failed"
    assert left_behind(run_dir) == []


@pytest.mark.sigint
def test_ctrl_c_cancels_the_export_and_leaves_no_part_or_staged_file(
    project: Path, tiny_model: Path, llama_release: LlamaRelease, tmp_path: Path
) -> None:
    run_dir = add_run(project, tiny_model)
    # A converter that hangs once it has started writing: the job is mid-export on Ctrl-C.
    env = env_for(tmp_path, llama_release, STANDIN_PACE="0.02")
    hang = tmp_path / "bin" / "python3"
    hang.write_text(
        "#!/bin/sh\n"
        'case "$1" in *convert_hf_to_gguf.py)\n'
        '  while [ "$#" -gt 0 ]; do [ "$1" = --outfile ] && out="$2"; shift; done\n'
        '  echo partial > "$out"; exec sleep 600;;\nesac\n'
        f'exec {shutil.which("python3")} "$@"\n'
    )
    hang.chmod(0o755)
    err = tmp_path / "err.txt"
    with err.open("w") as stderr:
        process = subprocess.Popen(
            command(project, "export", RUN, "--quantize", "F16"),
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    part = run_dir / "exports"
    deadline = time.monotonic() + 120
    while not list(part.glob("*/output/gguf/*.part")):
        assert process.poll() is None, err.read_text()
        assert time.monotonic() < deadline, err.read_text()
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=60)
    job = only_export(run_dir)
    assert process.returncode == 130, err.read_text()
    assert err.read_text().splitlines()[-1] == f"export {job.name} of run {RUN} was cancelled"
    assert out == ""
    assert left_behind(run_dir) == []
    assert json.loads((job / "run.json").read_text())["state"] == "cancelled"
    assert not (run_dir / "output" / "gguf").exists()
    pid = json.loads((job / "run.json").read_text())["job"]["pid"]
    wait_for(lambda: not group_alive(pid))


def test_a_stopped_run_exports_its_snapshot_with_a_warning(
    project: Path, tiny_model: Path, llama_release: LlamaRelease, tmp_path: Path
) -> None:
    snapshot = Snapshot("output/checkpoint-3", 3, "requested")
    run_dir = add_run(project, tiny_model, state=RunState.STOPPED, snapshot=snapshot)
    checkpoint = run_dir / "output" / "checkpoint-3"
    checkpoint.mkdir()
    for item in list((run_dir / "output").iterdir()):
        if item.is_file():
            item.rename(checkpoint / item.name)
    env = env_for(tmp_path, llama_release)
    result = overbrainer(project, env, "export", RUN, "--quantize", "F16", timeout=300)
    assert result.returncode == 0, result.stderr
    assert (
        f"WARN run {RUN} stopped at step 3: its export holds the partial model of that step"
        in result.stderr
    )
    assert f"runs/{RUN}/output/checkpoint-3 to GGUF F16" in result.stderr
    assert (run_dir / "output" / "gguf" / f"{RUN}-F16.gguf").is_file()


def test_the_base_model_from_the_hub_converts_for_real_beside_the_child(
    project: Path,
    tiny_model: Path,
    llama_release: LlamaRelease,
    llama_tools: LlamaTools,
    tmp_path: Path,
) -> None:
    """`export --base` of a run whose base_model is a Hub ID: the job downloads it from a
    loopback Hub (tests/hub_model_fake.py) into HF_HOME and converts it for real."""
    run_dir = add_run(project, tiny_model, state=RunState.FAILED)
    config = run_dir / "axolotl.yaml"
    text = config.read_text().replace(f"base_model: {tiny_model}\n", "base_model: acme/tiny\n")
    config.write_text(text)
    hf_home = tmp_path / "hf-home"
    with hub_model(tmp_path, tiny_model, "acme/tiny") as (url, _):
        env = env_for(
            tmp_path, llama_release, HF_ENDPOINT=url, HF_HOME=str(hf_home), HF_HUB_DISABLE_XET="1"
        )
        args = ("export", RUN, "--base", "--quantize", "Q8_0")
        result = overbrainer(project, env, *args, timeout=300)
    assert result.returncode == 0, result.stderr
    gguf_path = run_dir / "output" / "gguf" / f"{RUN}-base-Q8_0.gguf"
    job = only_export(run_dir)
    assert json.loads((job / "export.json").read_text())["model"] == "base"
    found = latest_export(run_dir, BASE)
    assert found is not None and run_dir / found.file == gguf_path
    assert latest_export(run_dir) is None
    snapshot = hf_home / "hub" / "models--acme--tiny" / "snapshots" / SHA
    assert f"export: converting {snapshot} to GGUF (auto)" in (job / "job.log").read_text()
    reader = gguf_reader(str(gguf_path))
    assert bytes(reader.fields["general.architecture"].parts[-1]).decode() == "llama"
    assert "tokenizer.chat_template" in reader.fields
    assert int(reader.fields["general.file_type"].parts[-1][0]) == 7  # MOSTLY_Q8_0
    assert left_behind(run_dir) == []
    _generate(llama_tools, gguf_path)


def test_after_training_the_job_exports_and_the_train_flow_delivers_once(
    project: Path, tiny_model: Path, llama_release: LlamaRelease, tmp_path: Path
) -> None:
    config = project / "overbrainer.toml"
    text = config.read_text().replace(
        'base_model = "Qwen/Qwen3-4B"', f'base_model = "{tiny_model}"'
    )
    text = text.replace("# merge = false ", "merge = true ")
    text = text.replace(
        "# [export]                   # GGUF export\n# after_training = false\n"
        '# quantize = "Q4_K_M"',
        '[export]\nafter_training = true\nquantize = "F16"',
    )
    config.write_text(text)
    env = env_for(tmp_path, llama_release, STANDIN_STEPS="4")
    result = overbrainer(project, env, "train", timeout=300)
    assert result.returncode == 0, result.stderr
    (run_id,) = [p.name for p in (project / "runs").iterdir() if not p.name.startswith(".")]
    run_dir = project / "runs" / run_id
    file = f"{run_id}-F16.gguf"
    size = (run_dir / "output" / "gguf" / file).stat().st_size
    from overbrainer.model.sizes import format_size

    lines = result.stdout.splitlines()
    assert lines[-3] == f"train: merged model in runs/{run_id}/output/merged"
    assert lines[-2:] == [
        f"export: GGUF in runs/{run_id}/output/gguf/{file} (F16, {format_size(size)}), "
        "Modelfile beside it",
        f"export: run it with Ollama after `cd runs/{run_id}/output/gguf && ollama create "
        f"{run_id} -f Modelfile`",
    ]
    exported = json.loads((run_dir / "export.json").read_text())
    assert exported["file"] == f"output/gguf/{file}"
    assert exported["quantize"] == "F16"
    assert exported["size"] == size
    log = (run_dir / "job.log").read_text()
    assert "export: converting output/merged to GGUF (f16)" in log
    assert not (run_dir / "export-work").exists()
    stages = [
        json.loads(line)["name"]
        for line in (run_dir / "metrics.jsonl").read_text().splitlines()
        if '"event":"stage"' in line
    ]
    assert stages == ["train", "train", "merge", "export"]  # preprocess and train are `train`
    # Following the run again delivers nothing a second time.
    again = overbrainer(project, env, "train", "attach", run_id, timeout=60)
    assert again.returncode == 0, again.stderr
    assert not any(line.startswith("export:") for line in again.stdout.splitlines())
    assert json.loads((run_dir / "export.json").read_text()) == exported


SSH_TARGET = """
[targets.box]
kind = "ssh"
runtime = "native"
venv = "{venv}"
workdir = "{workdir}"
"""


def ssh_run(
    tmp_path: Path, model: Path, release: LlamaRelease, sshd: Sshd
) -> tuple[Path, Path, dict[str, str], Path]:
    """A project whose run of `model` trained on the SSH target `box` (the sshd on loopback,
    its workdir `<tmp>/remote`): the project, the run's directory, the environment, the workdir."""
    remote = tmp_path / "remote"
    project = make_project(tmp_path / "p")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    # The job gets no environment of ours over SSH: its python3 is the venv's.
    python = venv / "bin" / "python3"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    with open(project / "overbrainer.toml", "a") as toml:
        toml.write(SSH_TARGET.format(venv=venv, workdir=remote))
    run_dir = add_run(project, model, target="box", remote_dir=f"{remote}/{RUN}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    env |= release.env() | {
        "OVERBRAINER_TEST_POLL_S": "0.05",
        "OVERBRAINER_TARGETS__BOX__HOST": ALIAS,
        "OVERBRAINER_SSH_CONFIG": str(sshd.client_config),
    }
    return project, run_dir, env, remote


def test_an_ssh_export_stages_the_model_uploads_and_brings_the_gguf_back(
    tiny_model: Path, llama_release: LlamaRelease, tmp_path: Path, sshd: Sshd
) -> None:
    project, run_dir, env, remote = ssh_run(tmp_path, tiny_model, llama_release, sshd)
    try:
        result = overbrainer(project, env, "export", RUN, "--quantize", "Q8_0", timeout=300)
        assert result.returncode == 0, result.stderr
        file = f"{RUN}-Q8_0.gguf"
        delivered = run_dir / "output" / "gguf" / file
        exported = json.loads((only_export(run_dir) / "export.json").read_text())
        assert exported["size"] == delivered.stat().st_size
        import hashlib

        assert exported["sha256"] == hashlib.sha256(delivered.read_bytes()).hexdigest()
        job = only_export(run_dir)
        remote_job = remote / RUN / "exports" / job.name
        assert (remote_job / "export.sh").is_file()  # the job ran there
        # The staged model and config were uploaded for the job, then removed on both sides.
        assert "export: converting output to GGUF (auto)" in (job / "job.log").read_text()
        assert not (remote_job / "axolotl.yaml").exists()
        assert not (remote_job / "output").exists()
        assert left_behind(run_dir) == []
        assert (remote / ".cache" / "llama.cpp" / llama_release.tag / "ubuntu-x64").is_dir()
    finally:
        kill_jobs_under(remote)


def test_an_ssh_base_export_converts_the_base_model_where_the_target_has_it(
    tiny_model: Path, llama_release: LlamaRelease, tmp_path: Path, sshd: Sshd
) -> None:
    project, run_dir, env, remote = ssh_run(tmp_path, tiny_model, llama_release, sshd)
    try:
        args = ("export", RUN, "--base", "--quantize", "Q8_0")
        result = overbrainer(project, env, *args, timeout=300)
        assert result.returncode == 0, result.stderr
        job = only_export(run_dir)
        # The base model's directory is the target's (the run's base_model): never staged.
        assert f"export: converting {tiny_model} to GGUF (auto)" in (job / "job.log").read_text()
        assert not (remote / RUN / "exports" / job.name / "output" / "config.json").exists()
        found = latest_export(run_dir, BASE)
        assert found is not None and found.file == f"output/gguf/{RUN}-base-Q8_0.gguf"
        reader = gguf_reader(str(run_dir / found.file))
        assert bytes(reader.fields["general.architecture"].parts[-1]).decode() == "llama"
        assert latest_export(run_dir) is None
        assert left_behind(run_dir) == []
    finally:
        kill_jobs_under(remote)


def test_a_docker_target_exports_in_its_container_and_delivers_the_gguf(
    project: Path, tiny_model: Path, llama_release: LlamaRelease, tmp_path: Path
) -> None:
    # The stand-in `docker` (tests/standin/container_standin.py) runs the job natively with the
    # mounts' container paths rewritten to host paths: the command line is what is checked.
    run_dir = add_run(project, tiny_model, adapter=True)
    toml = project / "overbrainer.toml"
    toml.write_text(
        toml.read_text().replace(
            'runtime = "native"           #', 'runtime = "docker"\nimage = "img:1"\n#', 1
        )
    )
    state = tmp_path / "engine"
    trace = tmp_path / "axolotl.log"
    secret = "hf_SecretTokenValue123"
    env = env_for(tmp_path, llama_release, STANDIN_LOG=str(trace), OVERBRAINER_HF_TOKEN=secret)
    env.update(install_engines(tmp_path / "bin", state))
    try:
        result = overbrainer(project, env, "export", RUN, timeout=300)
    finally:
        kill_containers(state)
    assert result.returncode == 0, result.stderr
    job = only_export(run_dir)
    name = f"overbrainer-{RUN}-{job.name}"
    recorded = calls(state)
    assert [c["engine"] for c in recorded] == ["docker"]
    argv = recorded[0]["argv"]
    assert argv[:4] == ["run", "--rm", "--name", name]
    options = run_options(argv)
    runs = (project / "runs").resolve()
    assert options["-v"] == [
        f"{run_dir.resolve()}:/workspace/run",
        f"{runs}/.hf-cache:/workspace/hf-cache",
        f"{runs}/.cache:/workspace/cache",
    ]
    assert options["-w"] == [f"/workspace/run/exports/{job.name}"]
    assert options[""][0] == "img:1"
    names = [item.partition("=")[0] for item in options["-e"]]
    assert set(llama_release.env()) <= set(names)
    assert {"OVERBRAINER_CACHE", "OVERBRAINER_EXPORT_MODEL", "HF_HOME"} <= set(names)
    assert not [n for n in names if "TOKEN" in n]
    assert secret not in (state / "calls.jsonl").read_text()
    assert secret not in result.stdout + result.stderr + (job / "job.log").read_text()
    # The adapter was merged inside the "container", the GGUF delivered here.
    assert [json.loads(line) for line in trace.read_text().splitlines()] == [
        ["merge-lora", "export-work/merge.yaml"]
    ]
    gguf_path = run_dir / "output" / "gguf" / f"{RUN}-Q4_K_M.gguf"
    exported = json.loads((job / "export.json").read_text())
    assert exported["size"] == gguf_path.stat().st_size
    assert exported["llama_cpp"] == llama_release.tag
    assert result.stdout.splitlines()[0].startswith(
        f"export: GGUF in runs/{RUN}/output/gguf/{RUN}-Q4_K_M.gguf (Q4_K_M, "
    )
    reader = gguf_reader(str(gguf_path))
    assert int(reader.fields["general.file_type"].parts[-1][0]) == 15  # MOSTLY_Q4_K_M
    assert "tokenizer.chat_template" in reader.fields
    # The tools went into the mounted cache: runs/.cache on this machine.
    cache = runs / ".cache" / "llama.cpp" / llama_release.tag
    assert (cache / "ubuntu-x64" / "llama-quantize").is_file()
    assert json.loads((job / "run.json").read_text())["job"]["container"] == {
        "engine": "docker",
        "name": name,
    }
    assert left_behind(run_dir) == []
    assert not list((state / "containers").iterdir())
