"""Benchmark decontamination: n-grams, overlap shares, the index, benchmark files, the split."""

from __future__ import annotations

from pathlib import Path

import pytest

from overbrainer.pipeline.benchmark_files import (
    audit_line,
    benchmark_problems,
    load_benchmarks,
    question_of,
    read_benchmark,
)
from overbrainer.pipeline.decontaminate import (
    BenchmarkIndex,
    Contamination,
    Source,
    grams,
    overlap,
)
from overbrainer.pipeline.split import plan_split
from overbrainer.storage.errors import InvalidRecord
from overbrainer.storage.ids import object_id
from overbrainer.storage.records import Example, FinishReason, Message, Meta, ReasoningKind

QUESTION = "Natalia sold clips to 48 of her friends in April, then in May."
"""13 words: 6 word 8-grams."""


def test_grams_are_lowercased_punctuation_free_word_ngrams() -> None:
    assert grams("The cat, the CAT!", 2) == {"the cat", "cat the"}
    assert grams("One two three four", 3) == {"one two three", "two three four"}
    # Shorter than n words: the whole normalized text is the one gram.
    assert grams("What is Rust's borrow?", 8) == {"what is rust s borrow"}
    assert grams("?!", 8) == frozenset()


def test_overlap_is_the_share_of_the_questions_ngrams_found_in_the_benchmark() -> None:
    # The benchmark has the first 11 words → 4 of the 6 8-grams.
    question = QUESTION
    benchmark = "natalia sold clips to 48 of her friends in april, then"
    assert len(grams(question, 8)) == 6
    assert overlap(question, benchmark, 8) == 4 / 6
    assert overlap(question, question.upper(), 8) == 1.0
    assert overlap("Completely unrelated words about borrowing in Rust.", benchmark, 8) == 0.0
    assert overlap("", benchmark, 8) == 0.0


def test_short_texts_match_only_the_same_short_text() -> None:
    assert overlap("What is 2+2?", "what is 2 2", 8) == 1.0
    assert overlap("What is 2+2?", "Tell me: what is 2+2? Explain step by step please.", 8) == 0.0


def _index(threshold: float, *questions: str) -> BenchmarkIndex:
    return BenchmarkIndex(8, threshold).add_all(
        (text, Source("bench/b.jsonl", line)) for line, text in enumerate(questions, start=1)
    )


def test_the_index_returns_the_best_benchmark_question_at_or_above_the_threshold() -> None:
    question = QUESTION
    partial = "natalia sold clips to 48 of her friends in april, then"  # 4 of 6
    index = _index(0.5, "Unrelated benchmark question about trains and stations", partial)
    assert index.match(question) == Contamination(Source("bench/b.jsonl", 2), 4 / 6)
    assert _index(4 / 6, partial).match(question) == Contamination(
        Source("bench/b.jsonl", 1), 4 / 6
    )
    assert _index(0.7, partial).match(question) is None
    # The best question wins, then the earliest on a tie.
    whole = _index(0.5, partial, question, question)
    assert whole.match(question) == Contamination(Source("bench/b.jsonl", 2), 1.0)


def test_shares_spread_over_several_benchmark_questions_do_not_add_up() -> None:
    question = QUESTION
    first = "natalia sold clips to 48 of her friends"  # 1 of 6
    last = "to 48 of her friends in april then in may"  # 3 of 6
    index = _index(0.6, first, last)
    assert (overlap(question, first, 8), overlap(question, last, 8)) == (1 / 6, 3 / 6)
    # Together they hold 4 of 6 (past 0.6), but no single one does.
    assert index.match(question) is None
    assert _index(0.5, first, last).match(question) == Contamination(
        Source("bench/b.jsonl", 2), 0.5
    )


def test_a_benchmark_line_gives_its_question_prompt_or_user_message() -> None:
    assert question_of('{"question":"Q?","answer":"42"}') == "Q?"
    assert question_of('{"prompt":"P?"}') == "P?"
    chat = '{"messages":[{"role":"system","content":"S"},{"role":"user","content":"U?"}]}'
    assert question_of(chat) == "U?"
    assert question_of('{"messages":[{"content":"first"}]}') == "first"
    for bad in ('{"text":"x"}', "[1]", "not json", '{"question":3}', '{"messages":[]}'):
        assert question_of(bad) is None


def test_reading_a_benchmark_names_the_file_and_line_of_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "b.jsonl"
    path.write_text('{"question":"A?"}\n\n{"prompt":"B?"}\n{"answer":1}\n')
    with pytest.raises(InvalidRecord) as caught:
        list(read_benchmark(path, "bench/b.jsonl"))
    assert caught.value.message == (
        "[quality] decontaminate: bench/b.jsonl line 4: expected a JSON object with a"
        " `question` or `prompt` string or a `messages` list"
    )
    with pytest.raises(InvalidRecord) as missing:
        load_benchmarks(tmp_path, ["bench/none.jsonl"], 8, 0.5)
    assert missing.value.message == "[quality] decontaminate: bench/none.jsonl not found"
    path.write_text('\ufeff{"question":"A?"}\n\n{"prompt":"B?"}\n', encoding="utf-8")
    assert list(read_benchmark(path, "b")) == [("A?", Source("b", 1)), ("B?", Source("b", 3))]


def test_a_file_that_is_not_utf8_text_is_named_with_its_first_bad_byte(tmp_path: Path) -> None:
    (tmp_path / "latin1.jsonl").write_bytes('{"question":"Qué?"}\n'.encode("latin-1"))
    # A byte-order mark counts in the offset: it is where the byte is in the file.
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + b'{"question":"\xf3"}\n')
    (tmp_path / "nul.jsonl").write_bytes(b'{"question":"A?"}\n\x00\n')
    (tmp_path / "dir.jsonl").mkdir()
    names = ["latin1.jsonl", "bom.jsonl", "nul.jsonl", "dir.jsonl", "none.jsonl"]
    assert benchmark_problems(tmp_path, names) == [
        "[quality] decontaminate: latin1.jsonl is not UTF-8 text (byte 0xe9 at offset 15)",
        "[quality] decontaminate: bom.jsonl is not UTF-8 text (byte 0xf3 at offset 16)",
        "[quality] decontaminate: nul.jsonl is binary",
        "[quality] decontaminate: dir.jsonl is a directory",
        "[quality] decontaminate: none.jsonl not found",
    ]


def test_an_audit_line_names_the_answer_and_the_benchmark_line() -> None:
    found = Contamination(Source("bench/gsm8k_test.jsonl", 12), 2 / 3)
    assert audit_line("ab" * 16, "math", "Sums", found) == (
        '{"id":"abababababababababababababababab","topic":"math","subtopic":"Sums",'
        '"benchmark":"bench/gsm8k_test.jsonl","line":12,"overlap":0.6667}'
    )


def test_plan_split_leaves_contaminated_answers_out_of_train_and_eval() -> None:
    texts: dict[str, str] = {}
    examples = []
    for n in range(20):
        text = f"Original question number {n} about ownership, moves and {n * 7919 % 10007}?"
        if n in (3, 11):
            text = f"{QUESTION[:-1]}, case {n}."  # 6 of its 8 8-grams in the benchmark
        e = Example(
            id=object_id("s", str(n)),
            topic="t" if n < 15 else "u",
            subtopic="s",
            messages=(Message("user", text), Message("assistant", "a")),
            meta=Meta("m", 0, 0, FinishReason.STOP, ReasoningKind.RAW),
        )
        examples.append(e)
        texts[e.id] = text
    index = _index(0.5, QUESTION + " How many clips did she sell?")
    plan = plan_split(examples, texts, {"t", "u"}, None, 0.1, 42, texts=texts, benchmark=index)
    assert [e.id for e, _ in plan.contaminated] == [examples[3].id, examples[11].id]
    kept = {e.id for e in plan.train + plan.eval}
    assert kept.isdisjoint(e.id for e, _ in plan.contaminated)
    assert len(kept) == 18
    assert plan.report.line() == "split: 16 train, 2 eval, 2 excluded (contaminated 2), 0 orphaned"
    assert plan.report.stats().excluded == 2
    # Counted for the selected topic only: both contaminated answers are of topic t.
    by_topic = [
        plan_split(examples, texts, {"t", "u"}, topic, 0.1, 42, texts=texts, benchmark=index)
        for topic in ("t", "u")
    ]
    assert [p.report.line() for p in by_topic] == [
        "split: 12 train, 1 eval, 2 excluded (contaminated 2), 0 orphaned",
        "split: 4 train, 1 eval, 0 excluded, 0 orphaned",
    ]
