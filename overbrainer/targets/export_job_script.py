"""The export job's script (`export.sh` after the shared llama.cpp helpers) and its environment."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources

from overbrainer.targets.llama_cpp import helpers_script, resolve_pin

SCRIPT_FILE = "export.sh"
FAILED_FILE = "export.failed"
"""The exit status of a training job's export that failed (the job itself still succeeds)."""
NAME_ENV = "OVERBRAINER_EXPORT_NAME"
QUANTIZE_ENV = "OVERBRAINER_EXPORT_QUANTIZE"
MODEL_ENV = "OVERBRAINER_EXPORT_MODEL"
CONFIG_ENV = "OVERBRAINER_EXPORT_CONFIG"
BASE_ENV = "OVERBRAINER_EXPORT_BASE"
"""Set to `1` when the model is the run's base model: a directory on the target or a Hub ID."""
CACHE_ENV = "OVERBRAINER_CACHE"
CACHE_DIR = ".cache"
"""The target's tool cache under its workdir (the local target's: `runs/.cache`)."""


def export_script() -> str:
    """The complete `export.sh`: the helpers with `SCRIPT_NAME=export`, then the export steps."""
    body = resources.files("overbrainer.targets").joinpath("scripts", SCRIPT_FILE)
    return "SCRIPT_NAME=export\n" + helpers_script() + "\n" + body.read_text("utf-8")


def export_env(
    *,
    name: str,
    quantize: str,
    model: str,
    config: str,
    cache: str,
    base: bool = False,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The variables of an export job: what to export (`base`: the run's base model, a
    directory or a Hub ID), where the cache is, and the pin."""
    return {
        NAME_ENV: name,
        QUANTIZE_ENV: quantize,
        MODEL_ENV: model,
        CONFIG_ENV: config,
        CACHE_ENV: cache,
        **({BASE_ENV: "1"} if base else {}),
        **resolve_pin(environ).job_env(),
    }


def gguf_name(run_id: str, quantize: str) -> str:
    """The file an export writes: `<run>-<QUANT>.gguf`."""
    return f"{run_id}-{quantize}.gguf"
