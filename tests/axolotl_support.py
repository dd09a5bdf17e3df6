"""The real Axolotl for the training tests: its cached venv, a tiny base model, a demo dataset.

`.ci/axolotl-venv.sh` installs PyTorch's CPU build and Axolotl from the package registry into a
venv cached outside the checkout (minutes the first time, then found at once). The base model
is made on the spot by Axolotl's own interpreter (`tests/tiny_model.py`), and the dataset by
overbrainer's own pipeline on the embedded stand-in provider (`init --demo`, `run --no-train`).
A failure to build any of them fails the test: these tests never skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.train_helpers import overbrainer

REPO_ROOT = Path(__file__).resolve().parent.parent
VENV_SCRIPT = REPO_ROOT / ".ci" / "axolotl-venv.sh"
TINY_MODEL = REPO_ROOT / "tests" / "tiny_model.py"

CPU_EXTRA = """
[training.axolotl_extra]
lora_mlp_kernel = false
lora_qkv_kernel = false
lora_o_kernel = false
bf16 = false
fp16 = false
"""
"""What a CPU box needs (docs/training.md, "Training on a CPU"); a full fine-tune ignores the
kernel keys."""


JOB_TIMEOUT = 600
"""Seconds one command of a real-Axolotl test may take (a training job is one to three minutes
on two cores)."""


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without OVERBRAINER_* and HF_* variables, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERBRAINER_", "HF_"))}
    env.update(OVERBRAINER_NO_UPDATE_CHECK="1", OVERBRAINER_TEST_POLL_S="0.2", **extra)
    return env


@pytest.fixture(scope="session")
def axolotl_venv() -> Path:
    """Axolotl's venv (built once, then cached outside the checkout)."""
    done = subprocess.run(["bash", str(VENV_SCRIPT)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"building Axolotl's venv failed:\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def child_base(axolotl_venv: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama whose chat template renders reasoning_content, made by Axolotl's
    Python."""
    folder = tmp_path_factory.mktemp("base") / "tiny-llama"
    subprocess.run(
        [str(axolotl_venv / "bin" / "python"), str(TINY_MODEL), str(folder)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return folder


@pytest.fixture(scope="session")
def demo_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo project whose dataset the real pipeline made (8 train, 1 eval answers)."""
    parent = tmp_path_factory.mktemp("dataset")
    env = clean_env()
    init = subprocess.run(
        [sys.executable, "-m", "overbrainer", "init", str(parent / "demo"), "--demo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert init.returncode == 0, init.stderr
    made = overbrainer(parent / "demo", env, "run", "--no-train", timeout=JOB_TIMEOUT)
    assert made.returncode == 0, made.stderr
    assert "split: 8 train, 1 eval" in made.stdout
    return parent / "demo"


def training_project(
    dataset: Path,
    root: Path,
    base: Path,
    *,
    adapter: str,
    target: str,
    epochs: int = 1,
    merge: bool = False,
    extra_config: str = "",
) -> Path:
    """A copy of the demo project that trains `base` with `adapter` on `target` (a TOML table
    the caller writes in `extra_config`), with the CPU settings."""
    shutil.copytree(dataset, root)
    config = root / "overbrainer.toml"
    text = config.read_text(encoding="utf-8")
    text += f"""
[training]
target = "{target}"
base_model = "{base}"
adapter = "{adapter}"
epochs = {epochs}
sequence_len = 512
micro_batch_size = 1
gradient_accumulation_steps = 1
evals_per_epoch = 2
merge = {"true" if merge else "false"}
{CPU_EXTRA}
{extra_config}
"""
    config.write_text(text, encoding="utf-8")
    return root
