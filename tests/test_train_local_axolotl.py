"""Which `axolotl` the local target runs (PATH or its venv), and training without a GPU."""

from __future__ import annotations

from pathlib import Path

from tests.train_helpers import (  # noqa: F401 (project_fixture is a fixture)
    only_run,
    overbrainer,
    project_fixture,
    record,
    run_ids,
    standin_env,
)


def test_a_missing_axolotl_refuses_the_training_and_creates_no_run(
    project: Path, tmp_path: Path
) -> None:
    env = standin_env(tmp_path / "bin")
    env["PATH"] = "/usr/bin:/bin"
    result = overbrainer(project, env, "train")
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        "error: target `local` cannot train: axolotl is not on PATH (set targets.local.venv to "
        "Axolotl's virtual environment)"
    )
    assert [line for line in result.stderr.splitlines() if "error" in line.lower()] == [
        result.stderr.splitlines()[-1]
    ]
    assert run_ids(project) == []


def test_a_venv_without_axolotl_refuses_the_training_and_creates_no_run(
    project: Path, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "axolotl").write_text("#!/bin/sh\n")  # not executable
    with open(project / "overbrainer.toml", "a") as config:
        config.write(f'venv = "{venv}"\n')
    result = overbrainer(project, standin_env(tmp_path / "bin"), "train")
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[-1] == (
        f"error: target `local` cannot train: no axolotl in {venv}/bin (targets.local.venv)"
    )
    assert run_ids(project) == []


def test_the_axolotl_of_the_venv_trains(project: Path, tmp_path: Path) -> None:
    env = standin_env(tmp_path / "bin")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (tmp_path / "bin" / "axolotl").rename(venv / "bin" / "axolotl")
    with open(project / "overbrainer.toml", "a") as config:
        config.write(f'venv = "{venv}"\n')
    result = overbrainer(project, env, "train", timeout=60)
    assert result.returncode == 0, result.stderr
    assert record(project, only_run(project))["state"] == "succeeded"


def test_a_venv_target_puts_the_venv_first_on_path_for_axolotls_own_launchers(
    project: Path, tmp_path: Path
) -> None:
    # Axolotl's `axolotl train` launches `accelerate` by name: a venv that is not on PATH
    # fails with FileNotFoundError. This venv's axolotl does the same.
    env = standin_env(tmp_path / "standin")
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (tmp_path / "standin" / "axolotl").rename(venv_bin / "launched")
    (venv_bin / "axolotl").write_text('#!/bin/sh\nexec launched "$@"\n')
    (venv_bin / "axolotl").chmod(0o755)
    env["OVERBRAINER_TARGETS__LOCAL__VENV"] = str(tmp_path / "venv")
    result = overbrainer(project, env, "train")
    assert result.returncode == 0, result.stderr
    run_id = only_run(project)
    assert result.stdout.startswith(f"train: run {run_id} succeeded; step 20/20")
    assert "launched: not found" not in (project / "runs" / run_id / "job.log").read_text()


def test_a_target_without_a_gpu_is_refused_until_the_cpu_settings_are_set(
    project: Path, tmp_path: Path
) -> None:
    env = standin_env(tmp_path / "bin")
    (tmp_path / "bin" / "nvidia-smi").unlink()  # this machine: no GPU
    result = overbrainer(project, env, "train")
    assert result.returncode == 2
    keys = ", ".join(
        f"training.axolotl_extra.{key}"
        for key in ("lora_mlp_kernel", "lora_qkv_kernel", "lora_o_kernel", "bf16", "fp16")
    )
    assert result.stderr.splitlines()[-1] == (
        f"error: target `local` has no GPU: to train on its CPU set {keys} = false "
        '(docs/training.md, "Training on a CPU")'
    )
    assert run_ids(project) == []
    for key in ("LORA_MLP_KERNEL", "LORA_QKV_KERNEL", "LORA_O_KERNEL", "BF16", "FP16"):
        env[f"OVERBRAINER_TRAINING__AXOLOTL_EXTRA__{key}"] = "false"
    result = overbrainer(project, env, "train")
    assert result.returncode == 0, result.stderr
    assert " INFO target `local` has no GPU: training on its CPU" in result.stderr
    config = (project / "runs" / only_run(project) / "axolotl.yaml").read_text()
    assert "lora_mlp_kernel: false" in config and "fp16: false" in config
