"""The stand-in provider's unscripted answers: a tiny, deterministic model.

A list prompt gets N distinct strings, the quality rubric a score, anything else an answer with
its reasoning; an embedding is a bag-of-words vector. Replies depend only on the request.
"""

from __future__ import annotations

import json
import math
import re

import xxhash

from overbrainer.devtools.stub_script import Recorded, Reply

EMBEDDING_DIMENSIONS = 64

_COUNT = re.compile(r"JSON array of (\d+) strings")
_SCORE_ASKED = '{"score": an integer from 1 to 10'
"""What the quality prompt (`prompts/quality.txt`) asks a reply to be."""
_QUOTED = re.compile(r'"([^"\n]{1,80})"')
_WORDS = [
    "caching",
    "errors",
    "threads",
    "memory",
    "tests",
    "logging",
    "parsing",
    "security",
    "performance",
    "networking",
    "serialization",
    "configuration",
    "deployment",
    "debugging",
    "profiling",
    "concurrency",
    "traits",
    "generics",
    "macros",
    "iterators",
    "closures",
    "modules",
    "packaging",
    "documentation",
    "benchmarks",
    "streams",
    "timeouts",
    "retries",
    "databases",
    "indexing",
    "migrations",
    "encoding",
    "validation",
    "scheduling",
    "recursion",
    "lifetimes",
    "pointers",
    "allocation",
    "ownership",
    "borrowing",
    "patterns",
]
_FORMS = (
    "How does {s} interact with {a}, {b} and {c}?",
    "Why would {s} fail when combined with {a}, {b} or {c}?",
    "What changes in {s} if {a} meets {b} under {c}?",
    "Compare {s} approaches for {a} against {b} given {c}.",
    "How would you debug {s} problems involving {a}, {b} and {c}?",
)


def _digest(*parts: str) -> int:
    return xxhash.xxh3_64_intdigest("\x1f".join(parts).encode())


def _subject(prompt: str) -> str:
    quoted = _QUOTED.findall(prompt)
    return quoted[-1] if quoted else "the topic"


def default_reply(request: Recorded) -> Reply:
    """What the stub answers unscripted: N distinct strings for a list prompt, else an answer.

    Replies depend only on the request, so a rerun of the same stage gets the same texts.
    """
    prompt = request.prompt or ""
    body = request.body_json if isinstance(request.body_json, dict) else {}
    found = _COUNT.search(prompt)
    tokens_in = max(1, len(prompt) // 4)
    if _SCORE_ASKED in prompt:
        # The quality judge's rubric: a score that depends only on the prompt, mostly good.
        score = 5 + _digest(prompt) % 6
        reason = f"A stand-in's grade: {score} of 10."
        return Reply(content=json.dumps({"score": score, "reason": reason}), usage=(tokens_in, 20))
    if found is not None or "response_format" in body:
        count = int(found.group(1)) if found is not None else 3
        subject = _subject(prompt)
        items = _list_items(prompt, subject, count, questions="question" in prompt.lower())
        return Reply(content=json.dumps(items), usage=(tokens_in, 12 * count))
    question = prompt.strip() or "the question"
    return Reply(
        content=f"Here is a careful answer to: {question}",
        reasoning=f"The user asks: {question} Let me reason about it step by step.",
        usage=(tokens_in, 60),
    )


def _list_items(prompt: str, subject: str, count: int, *, questions: bool) -> list[str]:
    items: list[str] = []
    seen: set[str] = set()
    k = 0
    while len(items) < count and k < count * 20:
        h = _digest(prompt, str(k))
        k += 1
        a, b, c = (_WORDS[(h >> shift) % len(_WORDS)] for shift in (0, 12, 24))
        if questions:
            item = _FORMS[(h >> 36) % len(_FORMS)].format(s=subject, a=a, b=b, c=c)
        else:
            item = f"{a.capitalize()} and {b} in {subject}"
        if item.lower() not in seen:
            seen.add(item.lower())
            items.append(item)
    return items


def default_embedding(text: str) -> list[float]:
    """A bag-of-words vector: texts sharing words point the same way."""
    vector = [0.0] * EMBEDDING_DIMENSIONS
    for word in re.findall(r"\w+", text.lower()):
        vector[_digest(word) % EMBEDDING_DIMENSIONS] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]
