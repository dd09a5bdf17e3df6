"""Whether a target can train: its `axolotl` found where the job will look, before any run exists.

A native job runs `<venv>/bin/axolotl` when the target has a `venv`, else the `axolotl` on the
PATH its `sh` gets; the check asks the same `sh` through the target's executor (this machine, or
over SSH with the job's non-interactive PATH). A container job's image and a pod's image hold
Axolotl themselves: those targets are not checked.

A native target with no GPU (neither `nvidia-smi -L` nor ROCm's `/dev/kfd` finds one, on the
job's PATH) trains on its CPU only when `[training.axolotl_extra]` turns off what needs CUDA:
Axolotl's Triton LoRA kernels (on by default for lora and qlora) and bf16/fp16. Without them the
job would fail minutes later inside Axolotl, so the check refuses at once and names the keys;
it never writes them itself, so `axolotl.yaml` says what runs, wherever the command is typed.
"""

from __future__ import annotations

import logging

from overbrainer.config.settings import Adapter, Training
from overbrainer.config.target_settings import TargetSettings
from overbrainer.model.errors import UsageError
from overbrainer.targets import Executor, kind_of, quote
from overbrainer.training.runtime import expand_venv

log = logging.getLogger(__name__)

KERNEL_KEYS = ("lora_mlp_kernel", "lora_qkv_kernel", "lora_o_kernel")
"""Axolotl's Triton LoRA kernels: CUDA only, switched on by Axolotl for lora and qlora."""
PRECISION_KEYS = ("bf16", "fp16")
"""Mixed precision, which Axolotl's `auto` resolves to fp16 on a CPU."""
CPU_DOC = 'docs/training.md, "Training on a CPU"'


class CannotTrain(UsageError):
    """The target has no `axolotl` where its job would run it (exit 2, no run created)."""


def checks_axolotl(target: TargetSettings | None) -> bool:
    """Whether `target` is one whose `axolotl` is checked, as its kind says: a native host's
    (a container's or a pod's image holds Axolotl)."""
    return target is not None and kind_of(target).checks(target).axolotl


def axolotl_script(venv: str | None) -> str:
    """The `sh` script that prints the path of the job's `axolotl`, and nothing without one."""
    if venv is None:
        return "command -v axolotl || :"
    path = quote(f"{venv.rstrip('/')}/bin/axolotl")
    return f"if [ -f {path} ] && [ -x {path} ]; then echo {path}; fi"


def cannot_train(name: str, venv: str | None) -> str:
    """The one line that says why target `name` cannot train."""
    if venv is not None:
        why = f"no axolotl in {venv.rstrip('/')}/bin (targets.{name}.venv)"
    else:
        why = f"axolotl is not on PATH (set targets.{name}.venv to Axolotl's virtual environment)"
    return f"target `{name}` cannot train: {why}"


GPU_MARK = "gpu"
"""The line `gpu_script` prints when the target has a GPU (an `axolotl` path never is it)."""


async def _look(
    name: str, target: TargetSettings, executor: Executor, gpu: bool
) -> tuple[str, bool]:
    """One probe of the target: its job's `axolotl` (CannotTrain without one) and, when
    `gpu`, whether it has a GPU."""
    configured = kind_of(target).checks(target).venv
    venv = expand_venv(configured, None if executor.local else executor.home)
    script = axolotl_script(venv)
    if gpu:
        script = f"{script}; {gpu_script(venv)}"
    lines = (await executor.probe(script)).split("\n")
    paths = [line.strip() for line in lines if line.strip() and line.strip() != GPU_MARK]
    if not paths:
        raise CannotTrain(cannot_train(name, venv))
    return paths[-1], GPU_MARK in (line.strip() for line in lines)


async def find_axolotl(name: str, target: TargetSettings, executor: Executor) -> str:
    """The path of the `axolotl` the target's job would run; CannotTrain when there is none."""
    path, _ = await _look(name, target, executor, gpu=False)
    return path


def cpu_settings_missing(training: Training) -> list[str]:
    """The `axolotl_extra` keys a CPU run needs set to false and that are not."""
    keys = (
        [*PRECISION_KEYS] if training.adapter is Adapter.FULL else [*KERNEL_KEYS, *PRECISION_KEYS]
    )
    return [key for key in keys if training.axolotl_extra.get(key) is not False]


def gpu_script(venv: str | None) -> str:
    """The `sh` script that prints `gpu` when the job's PATH finds an NVIDIA GPU, or ROCm's."""
    path = "" if venv is None else f'PATH={quote(venv.rstrip("/") + "/bin")}:"$PATH" '
    return (
        f"if {path}nvidia-smi -L 2>/dev/null | grep -q '^GPU' || [ -e /dev/kfd ]; "
        f"then echo {GPU_MARK}; fi"
    )


async def check_trainer(
    name: str, target: TargetSettings, training: Training, executor: Executor
) -> str:
    """The target's `axolotl`, looked up with its GPU in one probe; CannotTrain without
    `axolotl`, or without a GPU unless `training` turns off what needs CUDA."""
    path, gpu = await _look(name, target, executor, gpu=True)
    if gpu:
        return path
    missing = cpu_settings_missing(training)
    if missing:
        keys = ", ".join(f"training.axolotl_extra.{key}" for key in missing)
        raise CannotTrain(
            f"target `{name}` has no GPU: to train on its CPU set {keys} = false ({CPU_DOC})"
        )
    log.info("target `%s` has no GPU: training on its CPU", name)
    return path
