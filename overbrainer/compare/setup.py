"""`setup.json`: what a compare asks and of which GGUF, written before the job (§A.5)."""

from __future__ import annotations

import json
from typing import Any

import attrs

from overbrainer.compare.questions import EvalQuestion
from overbrainer.storage.json_doc import NotJson, load_document

SETUP_FILE = "setup.json"


@attrs.frozen
class CompareSetup:
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

    def to_json(self) -> str:
        """Pretty JSON with a trailing newline."""
        fields = {
            "run": self.run,
            "compare": self.compare,
            "gguf": self.gguf,
            "gguf_sha256": self.gguf_sha256,
            "quantize": self.quantize,
            "llama_cpp": self.llama_cpp,
            "base_model": self.base_model,
            "seed": self.seed,
            "created": self.created,
            "questions": [q.to_dict() for q in self.questions],
        }
        return json.dumps(fields, indent=2, ensure_ascii=False) + "\n"

    def questions_jsonl(self) -> str:
        """`questions.jsonl`: the id and messages of each question, compact, one per line."""
        return "".join(
            json.dumps(
                {"id": q.id, "messages": [m.to_dict() for m in q.messages]},
                ensure_ascii=False,
                separators=(",", ":"),
            )
            + "\n"
            for q in self.questions
        )

    @classmethod
    def from_json(cls, data: bytes, where: str) -> CompareSetup:
        """Parse `setup.json`; `ValueError` naming `where` when it is not one."""
        try:
            raw: Any = load_document(data)
        except NotJson as error:
            raise ValueError(f"{where} is not JSON ({error.where})") from None
        try:
            seed = raw["seed"]
            if type(seed) is not int:
                raise TypeError("seed")
            base = raw.get("base_model")
            return cls(
                str(raw["run"]),
                str(raw["compare"]),
                str(raw["gguf"]),
                str(raw["gguf_sha256"]),
                str(raw["quantize"]),
                str(raw["llama_cpp"]),
                None if base is None else str(base),
                seed,
                str(raw["created"]),
                tuple(EvalQuestion.from_dict(q) for q in raw["questions"]),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{where} is not a compare setup: {error}") from None
