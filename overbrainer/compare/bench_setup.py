"""`setup.json` of a bench: which GGUFs, which lm-eval tasks and how, written before its job."""

from __future__ import annotations

from typing import Self

import attrs

from overbrainer.model import codec
from overbrainer.storage import decode_document

BENCH_SETUP_FILE = "setup.json"


@codec.record("bench model")
@attrs.frozen
class BenchModel:
    """One benched model: `child` or `base`, its GGUF under the run and what it was exported as."""

    model: str
    gguf: str
    gguf_sha256: str
    quantize: str


@codec.record("bench setup", style=codec.Style.PRETTY, strict=False)
@attrs.frozen
class BenchSetup(codec.JsonRecord):
    """The bench's inputs; `bench --resume` reads this, never overbrainer.toml's `[bench]`."""

    run: str
    bench: str
    llama_cpp: str
    created: str
    models: tuple[BenchModel, ...]
    tasks: tuple[str, ...]
    limit: int | None
    num_fewshot: int | None
    lm_eval: str
    model_type: str
    max_tokens: int
    log_samples: bool
    context: int

    @property
    def child(self) -> BenchModel:
        """The run's own model (always benched first)."""
        return self.models[0]

    @classmethod
    def from_json(cls, data: str | bytes, where: str = BENCH_SETUP_FILE) -> Self:
        """Parse `setup.json`; `ValueError` naming `where` when it is not one."""
        return decode_document(cls, data, where, "a bench setup")
