"""Whether a target can train: its `axolotl` found where the job will look, before any run exists.

A native job runs `<venv>/bin/axolotl` when the target has a `venv`, else the `axolotl` on the
PATH its `sh` gets; the check asks the same `sh` through the target's executor (this machine, or
over SSH with the job's non-interactive PATH). A container job's image and a pod's image hold
Axolotl themselves: those targets are not checked.
"""

from __future__ import annotations

from overbrainer.config.settings import LocalTarget, Runtime, SshTarget, Target
from overbrainer.model.errors import UsageError
from overbrainer.targets.executor import Executor
from overbrainer.targets.job_script import quote
from overbrainer.training.runtime import expand_venv


class CannotTrain(UsageError):
    """The target has no `axolotl` where its job would run it (exit 2, no run created)."""


def checks_axolotl(target: Target | None) -> bool:
    """Whether `target` is one whose `axolotl` is checked: a native local or SSH target."""
    return isinstance(target, LocalTarget | SshTarget) and target.runtime is Runtime.NATIVE


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


async def find_axolotl(name: str, target: LocalTarget | SshTarget, executor: Executor) -> str:
    """The path of the `axolotl` the target's job would run; CannotTrain when there is none."""
    venv = expand_venv(target.venv, None if executor.local else executor.home)
    found = (await executor.probe(axolotl_script(venv))).strip()
    if not found:
        raise CannotTrain(cannot_train(name, venv))
    return found.splitlines()[-1]
