"""The child's answers (`child_answers.jsonl`) and throughput under load (`load.json`) (§A.6)."""

from __future__ import annotations

import json
import math
from typing import Any

import attrs


@attrs.frozen
class ChildAnswer:
    """One line of `child_answers.jsonl`: the child's answer and its timings, or an error."""

    id: str
    answer: str | None = None
    finish: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    seconds: float | None = None
    first_token_seconds: float | None = None
    tokens_per_second: float | None = None
    error: str | None = None

    @property
    def is_error(self) -> bool:
        """No usable answer: an error, or no answer at all (an empty answer is usable)."""
        return self.error is not None or self.answer is None

    @classmethod
    def from_json(cls, line: str | bytes) -> ChildAnswer:
        """Parse one line; `ValueError` when it is not an answer line."""
        raw: Any = json.loads(line)
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
            raise ValueError("not an answer line")
        return cls(
            raw["id"],
            _opt(raw, "answer", str),
            _opt(raw, "finish", str),
            _opt_int(raw, "input_tokens"),
            _opt_int(raw, "output_tokens"),
            _opt_float(raw, "seconds"),
            _opt_float(raw, "first_token_seconds"),
            _opt_float(raw, "tokens_per_second"),
            _opt(raw, "error", str),
        )


def _opt(raw: dict[str, Any], key: str, kind: type[str]) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, kind):
        raise ValueError(f"`{key}` is not a string")
    return value


def _opt_int(raw: dict[str, Any], key: str) -> int | None:
    value = raw.get(key)
    if value is not None and type(value) is not int:
        raise ValueError(f"`{key}` is not an integer")
    return value


def _opt_float(raw: dict[str, Any], key: str) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if type(value) not in (int, float):
        raise ValueError(f"`{key}` is not a number")
    return float(value) if math.isfinite(value) else None


def parse_answers(text: str) -> list[ChildAnswer]:
    """Every answer line of `child_answers.jsonl`; a torn or foreign line is skipped."""
    found: list[ChildAnswer] = []
    for line in text.splitlines():
        if line.strip():
            try:
                found.append(ChildAnswer.from_json(line))
            except ValueError:
                continue
    return found


@attrs.frozen
class LoadFigures:
    """Beyond the reference: the child under `concurrency` parallel requests (`load.json`)."""

    concurrency: int
    requests: int
    errors: int
    wall_seconds: float
    requests_per_second: float | None
    tokens_per_second: float | None
    latency_p50: float | None
    latency_p95: float | None

    def to_dict(self) -> dict[str, Any]:
        """The figures as JSON fields."""
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, text: str) -> LoadFigures:
        """Parse `load.json`; `ValueError` when it is not one."""
        raw: Any = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("load.json is not an object")
        try:
            return cls(
                int(raw["concurrency"]),
                int(raw["requests"]),
                int(raw["errors"]),
                float(raw["wall_seconds"]),
                _opt_float(raw, "requests_per_second"),
                _opt_float(raw, "tokens_per_second"),
                _opt_float(raw, "latency_p50"),
                _opt_float(raw, "latency_p95"),
            )
        except (KeyError, TypeError) as error:
            raise ValueError(f"load.json lacks or mistypes {error}") from None
