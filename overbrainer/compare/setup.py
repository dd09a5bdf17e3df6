"""`setup.json`: what a compare asks and of which GGUF, written before the job (§A.5)."""

from __future__ import annotations

from typing import Self

import attrs

from overbrainer.compare.questions import ChatMessage, EvalQuestion
from overbrainer.model import codec
from overbrainer.storage import decode_document

SETUP_FILE = "setup.json"


@codec.record(
    "compare setup",
    style=codec.Style.PRETTY,
    strict=False,
    optional=("base_model",),
    omit=("questions_file", "questions_sha256", "base_gguf", "base_gguf_sha256", "base_quantize"),
)
@attrs.frozen
class CompareSetup(codec.JsonRecord):
    """The compare's inputs; a rejudge reads this, never `data/eval.jsonl`."""

    run: str
    compare: str
    gguf: str
    gguf_sha256: str
    quantize: str
    llama_cpp: str
    base_model: str | None
    seed: int
    created: str
    questions: tuple[EvalQuestion, ...]
    questions_file: str | None = None
    """The user's questions file (`compare --questions`), as given; None: data/eval.jsonl."""
    questions_sha256: str | None = None
    """The SHA-256 of that file when the compare read it."""
    base_gguf: str | None = None
    """The base model's GGUF in the run's directory (`compare --base`); None: no base."""
    base_gguf_sha256: str | None = None
    """Its SHA-256, from its export record."""
    base_quantize: str | None = None
    """Its quantization, from its export record."""

    def questions_jsonl(self) -> str:
        """`questions.jsonl`: the id and messages of each question, compact, one per line."""
        return "".join(codec.dumps(_Asked(q.id, q.messages)) + "\n" for q in self.questions)

    @classmethod
    def from_json(cls, data: str | bytes, where: str = SETUP_FILE) -> Self:
        """Parse `setup.json`; `ValueError` naming `where` when it is not one."""
        return decode_document(cls, data, where, "a compare setup")


@codec.record("asked question")
@attrs.frozen
class _Asked:
    """A line of `questions.jsonl`: what the child is asked."""

    id: str
    messages: tuple[ChatMessage, ...]
