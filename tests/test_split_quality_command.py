"""`overbrainer split` with benchmark decontamination and near-duplicates kept together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from overbrainer.storage.ids import question_id, subtopic_id
from overbrainer.storage.records import Example, Message, Question, Subtopic
from tests.pipeline_support import (
    history,
    make_project,
    overbrainer,
    read_examples,
    write_answered,
)

NOWHERE = "http://127.0.0.1:9/v1"
BENCH = "bench/gsm8k_test.jsonl"


def _questions(root: Path) -> list[Question]:
    lines = (root / "data" / "questions.jsonl").read_text().splitlines()
    return [Question.from_json(line) for line in lines]


def _project(tmp_path: Path) -> Path:
    """40 answered questions in two topics (question 0 truncated)."""
    root = make_project(tmp_path / "p")
    write_answered(root, 40, topics=("ownership", "async"))
    return root


def _decontaminate(root: Path, benchmark: list[str]) -> None:
    """`benchmark` lines in bench/gsm8k_test.jsonl, named by `[quality] decontaminate`.

    The stored questions share a 12-word template, so every two share 5 of their 8 word
    8-grams (0.625): only a share of 0.9 tells a copied question from a templated one.
    """
    (root / "bench").mkdir()
    (root / BENCH).write_text("".join(f"{line}\n" for line in benchmark))
    with (root / "overbrainer.toml").open("a") as config:
        config.write(f'\n[quality]\ndecontaminate = ["{BENCH}"]\nngram_overlap = 0.9\n')


def _benchmark(questions: list[Question]) -> list[str]:
    """Line 1 rewords question 5, line 3 holds question 17 in a chat, line 2 is unrelated."""
    return [
        json.dumps({"question": questions[5].text.upper().replace(",", ""), "answer": "72"}),
        json.dumps({"prompt": "Janet's ducks lay 16 eggs per day. How many does she sell?"}),
        json.dumps(
            {
                "messages": [
                    {"role": "system", "content": "Solve it."},
                    {"role": "user", "content": f"Please: {questions[17].text} Think first."},
                ]
            }
        ),
    ]


async def test_split_leaves_benchmark_questions_out_and_writes_the_audit(tmp_path: Path) -> None:
    root = _project(tmp_path)
    questions = _questions(root)
    _decontaminate(root, _benchmark(questions))

    result = await overbrainer(root, "split", url=NOWHERE)
    assert result.code == 0, result.stderr
    assert result.out_lines == [
        "split: 33 train, 4 eval, 3 excluded (truncated 1, contaminated 2), 0 orphaned"
    ]
    written = read_examples(root, "train") + read_examples(root, "eval")
    assert len(written) == 37
    gone = {questions[5].id, questions[17].id}
    assert gone.isdisjoint(example.id for example in written)
    audit = (root / "data" / "decontaminated.jsonl").read_text().splitlines()
    answers = {answer.id: answer for answer in read_examples(root)}
    assert [json.loads(line) for line in audit] == [
        {
            "id": questions[n].id,
            "topic": questions[n].topic,
            "subtopic": answers[questions[n].id].subtopic,
            "benchmark": BENCH,
            "line": line,
            "overlap": 1.0,
        }
        for n, line in ((5, 1), (17, 3))
    ]
    [entry] = history(root)
    assert entry.excluded == 3
    assert entry.split is not None and (entry.split.train, entry.split.eval) == (33, 4)
    assert entry.split.moved == 0
    assert '"moved"' not in (root / ".overbrainer" / "history.jsonl").read_text()

    # Only the selected topic is counted; the audit still lists every topic's answers.
    by_topic = await overbrainer(root, "split", "--topic", "async", url=NOWHERE)
    assert by_topic.code == 0, by_topic.stderr
    assert (questions[5].topic, questions[17].topic) == ("ownership", "async")
    assert by_topic.out_lines == [
        "split: 17 train, 2 eval, 1 excluded (contaminated 1), 0 orphaned"
    ]
    assert (root / "data" / "decontaminated.jsonl").read_text().splitlines() == audit


async def test_a_bad_benchmark_line_stops_split_before_it_writes(tmp_path: Path) -> None:
    root = _project(tmp_path)
    _decontaminate(root, ['{"question":"What is 2+2?"}', '{"answer":"4"}'])
    for name in ("train", "eval", "decontaminated"):
        (root / "data" / f"{name}.jsonl").write_text("stale\n")

    result = await overbrainer(root, "split", url=NOWHERE)
    assert result.code == 2, result.stderr
    assert result.stderr.splitlines()[-1] == (
        f"error: [quality] decontaminate: {BENCH} line 2: expected a JSON object with a"
        " `question` or `prompt` string or a `messages` list"
    )
    assert result.out_lines == []
    assert history(root) == []
    for name in ("train", "eval", "decontaminated"):
        assert (root / "data" / f"{name}.jsonl").read_text() == "stale\n"


def _files(root: Path) -> dict[str, bytes]:
    """Every file of the project but the lock, by path: what a refused command must not touch."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name != "lock"
    }


BAD_BENCHMARKS = {
    "missing": (None, "not found"),
    "directory": ("dir", "is a directory"),
    "binary": (b'{"question":"A?"}\n\x89PNG\r\n\x1a\n\x00\x00', "is binary"),
    "latin-1": (
        '{"question":"A?"}\n{"question":"¿Qué pasó?"}\n'.encode("latin-1"),
        "is not UTF-8 text (byte 0xbf at offset 31)",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_BENCHMARKS))
async def test_a_bad_benchmark_file_is_refused_before_any_stage_starts(
    tmp_path: Path, case: str
) -> None:
    root = _project(tmp_path)
    _decontaminate(root, [])
    content, wrong = BAD_BENCHMARKS[case]
    (root / BENCH).unlink()
    if content == "dir":
        (root / BENCH).mkdir()
    elif isinstance(content, bytes):
        (root / BENCH).write_bytes(content)
    for name in ("train", "eval", "decontaminated"):
        (root / "data" / f"{name}.jsonl").write_text("stale\n")
    before = _files(root)
    expected = f"error: [quality] decontaminate: {BENCH} {wrong}"

    for args in (["split"], ["run", "--no-train"]):
        result = await overbrainer(root, *args, url=NOWHERE)
        assert result.code == 2, result.stderr
        assert [line for line in result.stderr.splitlines() if "error" in line] == [expected]
        assert "Errno" not in result.stderr and "codec" not in result.stderr
        assert result.out_lines == []
        assert history(root) == []
        assert _files(root) == before

    check = await overbrainer(root, "config", "check", url=NOWHERE)
    assert check.code == 2, check.stderr
    assert f"[quality] decontaminate: {BENCH} {wrong}" in check.stderr
    assert _files(root) == before


def _copy_to_other_topic(root: Path, every: int) -> dict[str, str]:
    """Copy every `every`-th question and answer, reworded (case, punctuation), to a
    `Copies` subtopic of the other topic; the reworded question text by ID, copies included."""
    questions = _questions(root)
    answers = read_examples(root)
    data = root / "data"
    with (
        (data / "questions.jsonl").open("a") as qs,
        (data / "answers.jsonl").open("a") as out,
        (data / "subtopics.jsonl").open("a") as subtopics,
    ):
        for question, answer in list(zip(questions, answers, strict=True))[1::every]:
            topic = "async" if question.topic == "ownership" else "ownership"
            sid = subtopic_id(topic, "Copies")
            text = question.text.lower().replace(",", "").replace("?", " ?")
            copy = Question(question_id(sid, text), topic, sid, "Copies", text)
            qs.write(copy.to_json() + "\n")
            messages = (Message("user", text), *answer.messages[1:])
            out.write(Example(copy.id, topic, "Copies", messages, answer.meta).to_json() + "\n")
        for topic in ("ownership", "async"):
            copies = Subtopic(subtopic_id(topic, "Copies"), topic, "Copies")
            subtopics.write(copies.to_json() + "\n")
    return {q.id: q.text.lower().replace(",", "").replace("?", " ?") for q in _questions(root)}


async def test_near_duplicates_in_other_topics_land_on_one_side(tmp_path: Path) -> None:
    root = _project(tmp_path)
    texts = _copy_to_other_topic(root, every=4)

    result = await overbrainer(root, "split", url=NOWHERE)
    assert result.code == 0, result.stderr
    assert result.out_lines == [
        "split: 46 train, 3 eval, 1 excluded (truncated 1), 0 orphaned,"
        " 2 moved to keep near-duplicates together"
    ]
    train, evaluation = read_examples(root, "train"), read_examples(root, "eval")
    assert {texts[e.id] for e in train}.isdisjoint(texts[e.id] for e in evaluation)
    [entry] = history(root)
    assert entry.split is not None and entry.split.moved == 2
    assert (
        '"split":{"train":46,"eval":3,"orphaned":0,"moved":2}'
        in (root / ".overbrainer" / "history.jsonl").read_text()
    )
    listed = await overbrainer(root, "history", "--all", url=NOWHERE)
    assert listed.out_lines[0].endswith("train 46, eval 3, excluded 1, orphaned 0, moved 2")


async def test_near_duplicates_of_every_eval_question_empty_eval_with_a_warning(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path)
    _copy_to_other_topic(root, every=1)

    result = await overbrainer(root, "split", url=NOWHERE)
    assert result.code == 0, result.stderr
    assert result.out_lines == [
        "split: 78 train, 0 eval, 1 excluded (truncated 1), 0 orphaned,"
        " 8 moved to keep near-duplicates together"
    ]
    assert (
        " WARN eval is empty: each of its 8 questions has a near-duplicate in train"
        " ([pipeline] dedup_threshold), so they all joined train"
    ) in result.stderr
