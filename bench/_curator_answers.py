"""Curator's answers to a questions file, for `bench/pipeline.py` (runs in Curator's own venv).

Run by `bench/pipeline.py` with the Python of a venv that has `bespokelabs-curator`
installed (it does not import overbrainer): `python bench/_curator_answers.py URL QUESTIONS
CONCURRENCY`. The same chat requests as the other two contenders, `CONCURRENCY` at once, no
rate limit of Curator's own, no cache; it prints how many answers came back.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any


def main() -> None:
    """Ask every question of the file through Curator's OpenAI backend."""
    # Curator counts tokens with tiktoken, which downloads its table unless it finds it in
    # this cache; litellm (a dependency of Curator) ships that very file.
    spec = importlib.util.find_spec("litellm")
    if spec is not None and spec.origin is not None:
        tokenizers = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(tokenizers))
    from bespokelabs import curator  # type: ignore[import-not-found]

    url, path, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3])
    texts = [json.loads(line)["text"] for line in Path(path).read_text().splitlines()]

    class Answers(curator.LLM):  # type: ignore[misc]
        def prompt(self, row: dict[str, Any]) -> list[dict[str, str]]:
            return [
                {"role": "system", "content": "You are an expert in ownership."},
                {"role": "user", "content": row["text"]},
            ]

        def parse(self, row: dict[str, Any], response: str) -> dict[str, Any]:
            return {"text": row["text"], "answer": response}

    llm = Answers(
        model_name="parent-model",
        backend="openai",
        generation_params={"max_tokens": 16384},
        backend_params={
            "base_url": url,
            "api_key": "bench",
            "max_concurrent_requests": concurrency,
            "max_requests_per_minute": 10_000_000,
            "max_tokens_per_minute": 10_000_000_000,
            "require_all_responses": False,
        },
    )
    answers = llm([{"text": t} for t in texts])
    print(f"curator: {len(answers.dataset)} answers")


if __name__ == "__main__":
    main()
