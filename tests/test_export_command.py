"""`overbrainer export`: its refusals, the delivery lines and `ollama create`, export.json lookup.

The real conversion is in test_export_gguf.py (it needs torch); these run in the main suite.
"""

from __future__ import annotations

import collections.abc
import json
import os
import sys
from pathlib import Path

import pytest
import trio

from overbrainer.export.deliver import (
    Delivered,
    deliver_in_job,
    modelfile_text,
    newest_gguf,
)
from overbrainer.export.job import delivery_lines
from overbrainer.export.record import ExportRecord, latest_export, write_export_record
from overbrainer.training.run_store import RunState, Snapshot
from tests.export_support import add_run
from tests.train_helpers import kill_jobs, make_project, overbrainer, standin_env

RUN = "my_project_20261203-120000"


@pytest.fixture
def project(tmp_path: Path) -> collections.abc.Iterator[Path]:
    root = make_project(tmp_path / "p")
    yield root
    kill_jobs(root)


@pytest.fixture
def fake_model(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    return folder


def snapshot_of(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".overbrainer" not in p.parts  # the lock file comes and stays
    }


def refused(project: Path, tmp_path: Path, *args: str) -> str:
    """Run `export` expecting a refusal: exit 2, one `error:` line, nothing changed on disk."""
    before = snapshot_of(project)
    result = overbrainer(project, standin_env(tmp_path / "bin"), "export", *args)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    assert result.stderr.splitlines()[-1] == errors[0]
    assert snapshot_of(project) == before
    return errors[0].removeprefix("error: ")


def test_an_unknown_run_is_refused(project: Path, tmp_path: Path) -> None:
    assert refused(project, tmp_path, "nope") == "no run nope in runs/"


@pytest.mark.parametrize("state", [RunState.FAILED, RunState.CANCELLED, RunState.RUNNING])
def test_only_a_succeeded_or_stopped_run_is_exported(
    project: Path, fake_model: Path, tmp_path: Path, state: RunState
) -> None:
    add_run(project, fake_model, state=state)
    assert refused(project, tmp_path, RUN) == (
        f"run {RUN} is {state.value}: only a succeeded or stopped run can be exported"
    )


def test_results_not_retrieved_are_refused(project: Path, fake_model: Path, tmp_path: Path) -> None:
    run_dir = add_run(project, fake_model)
    (run_dir / "job.log").unlink()
    assert refused(project, tmp_path, RUN) == (
        f"the results of run {RUN} were not retrieved: retrieve them with "
        f"`overbrainer train attach {RUN}`, then export"
    )


def test_a_stopped_run_whose_snapshot_is_not_here_is_refused(
    project: Path, fake_model: Path, tmp_path: Path
) -> None:
    snapshot = Snapshot("output/checkpoint-3", 3, "requested")
    add_run(project, fake_model, state=RunState.STOPPED, snapshot=snapshot)
    assert refused(project, tmp_path, RUN).startswith(f"the results of run {RUN} were not")


def test_a_missing_axolotl_yaml_is_refused(project: Path, fake_model: Path, tmp_path: Path) -> None:
    run_dir = add_run(project, fake_model)
    (run_dir / "axolotl.yaml").unlink()
    assert refused(project, tmp_path, RUN) == (
        f"runs/{RUN}/axolotl.yaml is missing: the export needs it"
    )


def test_an_output_without_a_model_is_refused(
    project: Path, fake_model: Path, tmp_path: Path
) -> None:
    run_dir = add_run(project, fake_model)
    (run_dir / "output" / "config.json").unlink()
    assert refused(project, tmp_path, RUN) == (
        f"runs/{RUN}/output holds no model: nothing to export"
    )


def test_an_unknown_quantize_type_is_refused(
    project: Path, fake_model: Path, tmp_path: Path
) -> None:
    add_run(project, fake_model)
    assert refused(project, tmp_path, RUN, "--quantize", "Q4_0") == (
        "--quantize: must be one of Q4_K_M, Q4_K_S, Q5_K_M, Q5_K_S, Q6_K, Q8_0, Q3_K_M, Q2_K, "
        "F16, BF16"
    )


@pytest.mark.parametrize("name", ["-child", "my.ns/child", "a/b/c/d", "child:", "x" * 81])
def test_an_invalid_ollama_name_is_refused(
    project: Path, fake_model: Path, tmp_path: Path, name: str
) -> None:
    add_run(project, fake_model)
    assert refused(project, tmp_path, RUN, "--ollama", name) == (
        "--ollama: must be an Ollama model name ([host/][namespace/]model[:tag])"
    )


def test_keep_pod_is_refused_on_a_local_target(
    project: Path, fake_model: Path, tmp_path: Path
) -> None:
    add_run(project, fake_model)
    assert refused(project, tmp_path, RUN, "--keep-pod") == (
        "--keep-pod only applies to a runpod target"
    )


def test_the_modelfile_names_the_file_and_the_context() -> None:
    assert modelfile_text("r-Q4_K_M.gguf", 2048) == (
        "FROM ./r-Q4_K_M.gguf\nPARAMETER num_ctx 2048\n"
    )
    assert modelfile_text("r-F16.gguf", None) == "FROM ./r-F16.gguf\n"


def _delivered(size: int = 412_345_678) -> Delivered:
    record = ExportRecord(
        "Q4_K_M",
        "b11320",
        f"output/gguf/{RUN}-Q4_K_M.gguf",
        "ab" * 32,
        size,
        "2026-12-03T12:00:00Z",
    )
    return Delivered(RUN, record)


def test_the_delivery_line_formats_the_size() -> None:
    assert _delivered().line() == (
        f"export: GGUF in runs/{RUN}/output/gguf/{RUN}-Q4_K_M.gguf (Q4_K_M, 412.3 MB), "
        "Modelfile beside it"
    )
    assert "(Q4_K_M, 1.2 GB)" in _delivered(1_299_999_999).line()


def _ollama(bin_dir: Path, code: int) -> Path:
    """A stand-in `ollama` that logs its argv and working directory, then exits with `code`."""
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "ollama"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "open(os.environ['OLLAMA_LOG'], 'a').write(json.dumps([os.getcwd(), sys.argv[1:],"
        " sys.stdin.read()]) + '\\n')\n"
        f"if {code}:\n"
        "    print('pulling manifest', file=sys.stderr)\n"
        "    print('Error: no space left on device', file=sys.stderr)\n"
        f"sys.exit({code})\n"
    )
    script.chmod(0o755)
    return script


async def test_ollama_create_runs_in_the_gguf_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _ollama(tmp_path / "bin", 0)
    log = tmp_path / "ollama.log"
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("OLLAMA_LOG", str(log))
    run_dir = tmp_path / "run"
    (run_dir / "output" / "gguf").mkdir(parents=True)
    with trio.fail_after(20):
        lines = await delivery_lines(run_dir, _delivered(), "me/child:q4")
    assert lines[1:] == ["export: Ollama model me/child:q4 created: `ollama run me/child:q4`"]
    assert [json.loads(line) for line in log.read_text().splitlines()] == [
        [str(run_dir / "output" / "gguf"), ["create", "me/child:q4", "-f", "Modelfile"], ""]
    ]
    assert not caplog.records


async def test_a_failed_ollama_create_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _ollama(tmp_path / "bin", 1)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("OLLAMA_LOG", str(tmp_path / "ollama.log"))
    (tmp_path / "output" / "gguf").mkdir(parents=True)
    with trio.fail_after(20):
        lines = await delivery_lines(tmp_path, _delivered(), "child")
    assert len(lines) == 1
    assert [r.getMessage() for r in caplog.records] == [
        "ollama create child failed: Error: no space left on device; create it with "
        "`ollama create child -f Modelfile`"
    ]


async def test_ollama_not_on_path_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with trio.fail_after(20):
        lines = await delivery_lines(tmp_path, _delivered(), "child")
    assert len(lines) == 1
    assert [r.getMessage() for r in caplog.records] == [
        "ollama is not on PATH: create the model with `ollama create child -f Modelfile`"
    ]


def _record(run_dir: Path, where: Path, file: str, created: str) -> None:
    record = ExportRecord("F16", "b1", file, "00" * 32, 1, created)
    where.mkdir(parents=True, exist_ok=True)
    write_export_record(where / "export.json", record)


def test_latest_export_is_the_newest_whose_file_exists(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    gguf = run_dir / "output" / "gguf"
    gguf.mkdir(parents=True)
    for name in ("a.gguf", "b.gguf", "c.gguf"):
        (gguf / name).write_bytes(b"x")
    _record(run_dir, run_dir / "exports" / "export_1", "output/gguf/a.gguf", "2026-12-03T10:00:00Z")
    _record(run_dir, run_dir / "exports" / "export_2", "output/gguf/b.gguf", "2026-12-03T12:00:00Z")
    _record(run_dir, run_dir, "output/gguf/c.gguf", "2026-12-03T11:00:00Z")
    latest = latest_export(run_dir)
    assert latest is not None and latest.file == "output/gguf/b.gguf"
    (gguf / "b.gguf").unlink()  # its file is gone: the next newest wins
    latest = latest_export(run_dir)
    assert latest is not None and latest.file == "output/gguf/c.gguf"
    (run_dir / "exports" / "export_3").mkdir()
    (run_dir / "exports" / "export_3" / "export.json").write_text("{not json")
    latest = latest_export(run_dir)
    assert latest is not None and latest.file == "output/gguf/c.gguf"
    for name in ("a.gguf", "c.gguf"):
        (gguf / name).unlink()
    assert latest_export(run_dir) is None


def test_an_in_job_export_is_delivered_once(tmp_path: Path) -> None:
    run_dir = tmp_path / RUN
    gguf = run_dir / "output" / "gguf"
    gguf.mkdir(parents=True)
    (run_dir / "axolotl.yaml").write_text("sequence_len: 1024\n")
    assert deliver_in_job(RUN, run_dir, "b1") is None
    (gguf / f"{RUN}-Q8_0.gguf").write_bytes(b"gguf" * 10)
    os.utime(gguf / f"{RUN}-Q8_0.gguf", (1, 1))
    (gguf / f"{RUN}-Q4_K_M.gguf").write_bytes(b"gguf" * 5)
    assert newest_gguf(run_dir, RUN) == gguf / f"{RUN}-Q4_K_M.gguf"
    delivered = deliver_in_job(RUN, run_dir, "b1")
    assert delivered is not None
    saved = json.loads((run_dir / "export.json").read_text())
    assert saved["file"] == f"output/gguf/{RUN}-Q4_K_M.gguf"
    assert saved["quantize"] == "Q4_K_M"
    assert saved["size"] == 20
    assert (gguf / "Modelfile").read_text() == f"FROM ./{RUN}-Q4_K_M.gguf\nPARAMETER num_ctx 1024\n"
    assert deliver_in_job(RUN, run_dir, "b1") is None  # the same file at the same size


def test_an_in_job_export_runs_sh_after_the_merge_and_its_failure_is_its_own() -> None:
    from overbrainer.config.settings import Adapter, Training
    from overbrainer.targets.job_script import chain
    from overbrainer.training.prepare import job_commands

    training = Training(target="local", base_model="m", adapter=Adapter.LORA, merge=True)
    commands = job_commands(training, export=True)
    assert [c.stage.value for c in commands] == ["train", "train", "merge", "export"]
    text = chain(commands, "/venv")
    assert text.endswith(
        "&& '/venv/bin/axolotl' 'merge-lora' 'axolotl.yaml' && { "
        '{ printf \'{"event":"stage","name":"%s","time":%s}\\n\' export "$(date +%s)" >> '
        "'metrics.jsonl' || :; } && 'sh' 'export.sh' || { echo \"$?\" > 'export.failed' || :; }; "
        "}; }; }"
    )
    assert [c.stage.value for c in job_commands(training)] == ["train", "train", "merge"]


def test_the_export_step_of_a_job_records_its_failure_and_the_job_ends_with_the_training(
    tmp_path: Path,
) -> None:
    import subprocess

    from overbrainer.config.settings import Adapter, Training
    from overbrainer.targets.job_script import chain
    from overbrainer.training.prepare import job_commands

    training = Training(target="local", base_model="m", adapter=Adapter.LORA)
    (tmp_path / "export.sh").write_text("echo 'export: no converter' >&2; exit 3\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "axolotl").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "axolotl").chmod(0o755)
    text = chain(job_commands(training, export=True), str(tmp_path))
    done = subprocess.run(["sh", "-c", text], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "export.failed").read_text() == "3\n"
    assert "export: no converter" in done.stderr


AFTER_TRAINING = """
[export]
after_training = true
quantize = "F16"
"""


def test_a_failed_export_after_training_leaves_the_run_succeeded_and_export_retries_it(
    project: Path, fake_model: Path, tmp_path: Path
) -> None:
    config = project / "overbrainer.toml"
    text = config.read_text().replace(
        'base_model = "Qwen/Qwen3-4B"', f'base_model = "{fake_model}"'
    )
    config.write_text(text.replace("# merge = false ", "merge = true ") + AFTER_TRAINING)
    # The merged model is there; the export cannot fetch llama.cpp's converter (nothing listens).
    env = standin_env(tmp_path / "bin", STANDIN_STEPS="4")
    env["OVERBRAINER_LLAMA_CPP_URL"] = "http://127.0.0.1:9"
    result = overbrainer(project, env, "train", timeout=120)
    assert result.returncode == 0, result.stderr
    (run_id,) = [p.name for p in (project / "runs").iterdir() if not p.name.startswith(".")]
    run_dir = project / "runs" / run_id
    assert json.loads((run_dir / "run.json").read_text())["state"] == "succeeded"
    assert (run_dir / "export.failed").read_text().strip() == "1"
    fetch = "cannot fetch http://127.0.0.1:9/archive/refs/tags/"
    warning = next(line for line in result.stderr.splitlines() if "export after training" in line)
    assert f" WARN export after training failed: {fetch}" in warning
    assert warning.endswith(
        f"(see runs/{run_id}/job.log); retry with `overbrainer export {run_id}`"
    )
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"train: run {run_id} succeeded; ")
    assert lines[-2] == f"train: merged model in runs/{run_id}/output/merged"
    assert lines[-1] == f"export: failed after training; retry with `overbrainer export {run_id}`"
    # Following the run again says it again; `export` is not refused for the run's state.
    again = overbrainer(project, env, "train", "attach", run_id, timeout=60)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == lines[-1]
    retry = overbrainer(project, env, "export", run_id, timeout=60)
    assert retry.returncode == 1, retry.stderr
    assert "INFO export: export_" in retry.stderr
    assert retry.stderr.splitlines()[-1].startswith("error: export export_")
    assert f"of run {run_id} failed: {fetch}" in retry.stderr.splitlines()[-1]
