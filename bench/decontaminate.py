"""Split quality figures: near-duplicate clusters and benchmark decontamination at scale.

Synthetic questions (`_synthetic.question`); 2% of them are reworded copies (case,
punctuation, one word changed) of others, filed under another topic. The benchmark holds
10,000 questions of its own, 1% of the stored questions with a trailing clause, and 1% of them
copied whole.
"""

from __future__ import annotations

import random
import resource
import sys
import time

from _synthetic import VOCABULARY, question

from overbrainer.pipeline.decontaminate import BenchmarkIndex, Source
from overbrainer.pipeline.near_duplicates import cluster_labels
from overbrainer.pipeline.split import plan_split
from overbrainer.storage.ids import object_id
from overbrainer.storage.records import Example, FinishReason, Message, Meta, ReasoningKind

BENCHMARK = 10_000


def _reworded(rng: random.Random, text: str) -> str:
    words = text.rstrip("?").lower().split()
    words[rng.randrange(len(words))] = rng.choice(VOCABULARY)
    return ", ".join(words) + "!"


def dataset(n: int, rng: random.Random) -> tuple[list[Example], dict[str, str]]:
    """`n` usable examples over 10 topics × 100 subtopics, and their question texts."""
    texts: list[str] = [question(rng) for _ in range(n - n // 50)]
    texts += [_reworded(rng, rng.choice(texts)) for _ in range(n // 50)]
    meta = Meta("m", 0, 0, FinishReason.STOP, ReasoningKind.RAW)
    examples = []
    for i, text in enumerate(texts):
        topic, subtopic = f"topic {i % 10}", f"subtopic {i // 10 % 100}"
        messages = (Message("user", text), Message("assistant", "a"))
        examples.append(Example(object_id(topic, str(i)), topic, subtopic, messages, meta))
    return examples, {e.id: e.messages[0].content for e in examples}


def benchmark(stored: list[str], rng: random.Random) -> list[str]:
    """10,000 benchmark questions: 1% of the stored ones with a clause added, 1% copied."""
    questions = [question(rng) for _ in range(BENCHMARK)]
    for i, text in enumerate(rng.sample(stored, len(stored) // 50)):
        questions[i] = text if i % 2 else f"{text} Answer with a number between one and ten."
    return questions


def _since(started: float) -> str:
    return f"{time.perf_counter() - started:.2f} s"


def bench(n: int) -> None:
    rng = random.Random(n)
    examples, texts = dataset(n, rng)
    questions = benchmark(list(texts.values()), rng)
    topics = {f"topic {t}" for t in range(10)}
    print(f"{n:,} examples, dedup_threshold 0.8, a {BENCHMARK:,}-question benchmark (8, 0.5):")

    started = time.perf_counter()
    clusters = len(set(cluster_labels(list(texts.values()), 0.8)))
    print(f"  near-duplicate clusters: {_since(started)} ({clusters:,} clusters)")

    started = time.perf_counter()
    source = Source("bench/synthetic.jsonl", 0)
    index = BenchmarkIndex(8, 0.5).add_all((text, source) for text in questions)
    print(f"  index the benchmark: {_since(started)}")

    started = time.perf_counter()
    found = sum(index.match(text) is not None for text in texts.values())
    print(f"  match every question: {_since(started)} ({found:,} contaminated)")

    started = time.perf_counter()
    plain = plan_split(examples, texts, topics, None, 0.1, 42)
    print(f"  plan_split, reference only: {_since(started)}")
    started = time.perf_counter()
    plan = plan_split(examples, texts, topics, None, 0.1, 42, texts=texts, benchmark=index)
    print(f"  plan_split, decontaminated and clustered: {_since(started)}")
    print(f"    {plain.report.line()}")
    print(f"    {plan.report.line()}")


if __name__ == "__main__":
    for size in [int(arg) for arg in sys.argv[1:]] or [20_000, 100_000]:
        bench(size)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MB")
