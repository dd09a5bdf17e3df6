"""`ollama create NAME -f Modelfile` beside a delivered GGUF (§B.5), with the spec's warnings."""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

import trio

from overbrainer.export.deliver import MODELFILE

log = logging.getLogger(__name__)

CREATE_BOUND = 1800.0
"""Seconds `ollama create` may take (it copies the GGUF into Ollama's store)."""


def create_command(name: str) -> str:
    """The command the lines suggest: `ollama create NAME -f Modelfile`."""
    return f"ollama create {name} -f {MODELFILE}"


def hint(folder: str, name: str) -> str:
    """The line printed when no Ollama name is given."""
    return f"export: run it with Ollama after `cd {folder} && {create_command(name)}`"


async def create(folder: Path, name: str) -> str | None:
    """Run `ollama create` in `folder`; the success line, or None after a warning."""
    command = create_command(name)
    program = shutil.which("ollama")
    if program is None:
        log.warning("ollama is not on PATH: create the model with `%s`", command)
        return None
    try:
        with trio.fail_after(CREATE_BOUND):
            done = await trio.run_process(
                [program, "create", name, "-f", MODELFILE],
                cwd=folder,
                stdin=subprocess.DEVNULL,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
    except (OSError, trio.TooSlowError) as error:
        reason = "it took too long" if isinstance(error, trio.TooSlowError) else str(error)
        log.warning("ollama create %s failed: %s; create it with `%s`", name, reason, command)
        return None
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        last = lines[-1].strip() if lines else f"exit code {done.returncode}"
        log.warning("ollama create %s failed: %s; create it with `%s`", name, last, command)
        return None
    return f"export: Ollama model {name} created: `ollama run {name}`"
