"""overbrainer's Axolotl plugin: metric lines for the follower and snapshots on request.

Copied into each run's `plugin/` directory and loaded by Axolotl from `PYTHONPATH` as
`overbrainer_metrics.OverbrainerMetricsPlugin`. It imports only the standard library and,
when present, transformers, torch and axolotl, so it also works where overbrainer is absent.
"""

from __future__ import annotations

import json
import math
import os
import time
from typing import Any

try:  # Axolotl wants its own base class; without Axolotl the callbacks still work.
    from axolotl.integrations.base import BasePlugin as _PluginBase
except Exception:

    class _PluginBase:  # type: ignore[no-redef]
        """Stand-in base when Axolotl is not importable."""


try:
    from transformers import TrainerCallback as _CallbackBase
except Exception:

    class _CallbackBase:  # type: ignore[no-redef]
        """Stand-in base when transformers is not importable."""


METRICS_ENV = "OVERBRAINER_METRICS"
SNAPSHOT_ENV = "OVERBRAINER_SNAPSHOT"
EVAL_EVERY = 2.0
"""Seconds between two `eval` lines of one evaluation (the first is written at once)."""
REASONS = ("requested", "deadline", "cost", "disk")
LOGGED_KEYS = ("loss", "eval_loss", "learning_rate", "grad_norm")


def _num(value: Any) -> float | None:
    """A finite float, or None for anything else."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _is_zero(state: Any) -> bool:
    """Whether this process is the world's rank 0 (true when the state does not say)."""
    return bool(getattr(state, "is_world_process_zero", True))


def _writes_metrics(state: Any) -> bool:
    """Whether this process writes the metrics: the world's rank 0 by its trainer's state and by
    its launcher's `RANK` (each Ray Train worker on the CPU calls itself process zero, and
    every step would be written once per worker)."""
    return os.environ.get("RANK", "0").strip() in ("", "0") and _is_zero(state)


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


class MetricsCallback(_CallbackBase):  # type: ignore[misc,unused-ignore]
    """Appends one JSON line per begin, log, evaluation progress and end to the metrics file."""

    def __init__(self, path: str, clock: Any = time.time) -> None:
        self.path = path
        self._clock = clock
        self._eval_step = 0
        self._last_eval = 0.0

    def _write(self, state: Any, record: dict[str, Any]) -> None:
        if not _writes_metrics(state):
            return
        try:
            folder = os.path.dirname(self.path)
            if folder:
                os.makedirs(folder, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as file:
                file.write(json.dumps(record) + "\n")
                file.flush()
        except Exception:
            pass

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Say the plugin is loaded and how many steps the training has."""
        try:
            record = {
                "event": "begin",
                "time": self._clock(),
                "max_steps": _int_or_none(getattr(state, "max_steps", None)),
            }
        except Exception:
            return
        self._write(state, record)

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        """One training or evaluation log."""
        try:
            if not logs:
                return
            record: dict[str, Any] = {
                "event": "log",
                "time": self._clock(),
                "step": int(getattr(state, "global_step", 0) or 0),
                "epoch": _num(getattr(state, "epoch", None)),
                "max_steps": _int_or_none(getattr(state, "max_steps", None)),
            }
            for key in LOGGED_KEYS:
                if key in logs:
                    record[key] = _num(logs[key])
        except Exception:
            return
        self._write(state, record)

    def on_prediction_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Progress of an evaluation: the first step at once, then one line per 2 s at most."""
        try:
            self._eval_step += 1
            now = self._clock()
            if self._eval_step > 1 and now - self._last_eval < EVAL_EVERY:
                return
            self._last_eval = now
            record: dict[str, Any] = {"event": "eval", "time": now, "step": self._eval_step}
            total = _length(kwargs.get("eval_dataloader"))
            if total is not None:
                record["total"] = total
        except Exception:
            return
        self._write(state, record)

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """An evaluation ended: the next one counts from 1 again."""
        self._eval_step = 0

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """The training loop ended; what follows is the trainer's final work."""
        try:
            record = {
                "event": "end",
                "time": self._clock(),
                "step": int(getattr(state, "global_step", 0) or 0),
            }
        except Exception:
            return
        self._write(state, record)


def _length(loader: Any) -> int | None:
    if loader is None:
        return None
    try:
        return len(loader)
    except Exception:
        return None


def _broadcast(flag: bool) -> bool:
    """Rank 0's flag on every rank, so all ranks stop at the same step."""
    try:
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            return flag
        import torch

        backend = dist.get_backend()
        device = "cpu"
        if backend == "nccl" and torch.cuda.is_available():
            device = f"cuda:{torch.cuda.current_device()}"
        tensor = torch.tensor([1 if flag else 0], dtype=torch.int32, device=device)
        dist.broadcast(tensor, src=0)
        return bool(tensor.item())
    except ImportError:
        return flag


class SnapshotCallback(_CallbackBase):  # type: ignore[misc,unused-ignore]
    """Saves a checkpoint and stops when the request file appears, then writes its proof."""

    def __init__(self, request: str, clock: Any = time.time) -> None:
        self.request = request
        self.reason: str | None = None
        self._clock = clock

    def _requested(self, state: Any) -> bool:
        found = False
        if _is_zero(state):
            try:
                found = os.path.exists(self.request)
            except Exception:
                found = False
        try:
            return _broadcast(found)
        except Exception:
            return found

    def _read_reason(self) -> str:
        try:
            with open(self.request, encoding="utf-8", errors="replace") as file:
                word = file.read().strip()
        except OSError:
            return "requested"
        return word if word in REASONS else "requested"

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        """After each step: a request makes the trainer save now and stop."""
        if self.reason is not None:
            return control
        if not self._requested(state):
            return control
        max_steps = _int_or_none(getattr(state, "max_steps", None)) or 0
        if 0 < max_steps <= int(getattr(state, "global_step", 0) or 0):
            return control  # the last step: the trainer ends and saves normally, with no proof
        self.reason = self._read_reason()
        control.should_save = True
        control.should_training_stop = True
        return control

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Prove the requested checkpoint exists, atomically, next to the request file."""
        if self.reason is None or not _is_zero(state):
            return
        try:
            root = os.path.dirname(os.path.abspath(self.request))
            step = int(getattr(state, "global_step", 0) or 0)
            output_dir = str(getattr(args, "output_dir", "output"))
            checkpoint = os.path.join(output_dir, f"checkpoint-{step}")
            record = {
                "checkpoint": os.path.relpath(os.path.abspath(checkpoint), root),
                "step": step,
                "time": self._clock(),
                "reason": self.reason,
            }
            proof = os.path.join(root, "snapshot.json")
            temp = proof + ".tmp"
            with open(temp, "w", encoding="utf-8") as file:
                file.write(json.dumps(record) + "\n")
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, proof)
        except Exception:
            pass


class OverbrainerMetricsPlugin(_PluginBase):  # type: ignore[misc]
    """The Axolotl plugin: adds the metrics and snapshot callbacks the environment asks for."""

    def add_callbacks_pre_trainer(self, cfg: Any, model: Any) -> list[Any]:
        """The callbacks for `OVERBRAINER_METRICS` and `OVERBRAINER_SNAPSHOT`, when set."""
        callbacks: list[Any] = []
        metrics = os.environ.get(METRICS_ENV)
        if metrics:
            callbacks.append(MetricsCallback(metrics))
        request = os.environ.get(SNAPSHOT_ENV)
        if request:
            callbacks.append(SnapshotCallback(request))
        return callbacks
