"""`split` over compact rows: the same files as before, and a kill -9 loses neither file."""

from __future__ import annotations

import hashlib
import os
import random
import signal
from pathlib import Path

import attrs
import trio

from overbrainer.model.finish import FinishReason, ReasoningKind
from overbrainer.pipeline.quality_scores import QualityScore, answer_sha
from overbrainer.pipeline.split import stratify
from overbrainer.project.directory import Project
from overbrainer.storage.force_state import ForceState, save_force_state
from overbrainer.storage.ids import question_id, subtopic_id
from overbrainer.storage.records import Example, Exclusion, Message, Meta, Question, Subtopic
from tests.pipeline_support import (
    make_project,
    overbrainer,
    read_examples,
    start,
    wait_until,
    write_answered,
)

URL = "http://127.0.0.1:9/v1"
WORDS = [f"w{n}" for n in range(30)]


def _reworded(text: str, rng: random.Random) -> str:
    """A near-duplicate of `text` (or not quite one): a word added or dropped, or shouted."""
    words = text.rstrip("?").split()
    way = rng.randrange(3)
    if way == 0:
        return " ".join([*words, rng.choice(WORDS)]) + "?"
    if way == 1:
        return " ".join(words[:-1]) + "!"
    return text.upper()


def _answer(question: Question, n: int, excluded: Exclusion | None = None) -> Example:
    meta = Meta("parent-model", 10, 5, FinishReason.STOP, ReasoningKind.RAW, excluded)
    messages = (Message("user", question.text), Message("assistant", f"A{n}", f"R{n}"))
    return Example(question.id, question.topic, question.subtopic, messages, meta)


def _write_mixed(root: Path) -> None:
    """240 answers over two topics and six subtopics, a third of them near-duplicates of an
    earlier one (across subtopics and topics), with every case the split tells apart: excluded,
    scored low (and a low score of a line since replaced, and one overruled by a later score),
    an answer replaced by a later line, orphans (question gone, topic gone, question dropped by
    a force), and a question replaced by a later line with another text."""
    rng = random.Random(41)
    subtopics = [
        Subtopic(subtopic_id(topic, f"Part {n}"), topic, f"Part {n}")
        for topic in ("ownership", "async")
        for n in range(3)
    ]
    questions: list[Question] = []
    for n in range(240):
        sub = rng.choice(subtopics)
        if questions and rng.random() < 0.35:
            text = _reworded(rng.choice(questions).text, rng)
        else:
            text = " ".join(rng.choices(WORDS, k=rng.randint(4, 12))).capitalize() + f" {n}?"
        questions.append(Question(question_id(sub.id, text), sub.topic, sub.id, sub.name, text))
    answers = [
        _answer(q, n, Exclusion.TRUNCATED if n % 23 == 0 else None) for n, q in enumerate(questions)
    ]
    replaced = answers[5]
    answers.append(_answer(questions[5], 1000))  # the later line of the same ID wins
    answers.append(_answer(Question("0" * 32, "async", "s", "Part 0", "gone"), 1001))
    retired = questions[9]
    answers[9] = Example(
        retired.id, "retired", retired.subtopic, answers[9].messages, answers[9].meta
    )
    lines = [a.to_json() for a in answers]
    # A later line of question 7 takes question 8's text; question 11 a force dropped.
    moved = questions[7]
    later = Question(moved.id, moved.topic, moved.subtopic_id, moved.subtopic, questions[8].text)
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "subtopics.jsonl").write_text("".join(s.to_json() + "\n" for s in subtopics))
    question_lines = [q.to_json() for q in questions] + [later.to_json()]
    (data / "questions.jsonl").write_text("".join(line + "\n" for line in question_lines))
    (data / "answers.jsonl").write_text("".join(line + "\n" for line in lines))
    scores = [
        QualityScore(a.id, answer_sha(line), 3 if n % 4 == 0 else 8, "r", "judge", "p")
        for n, (a, line) in enumerate(zip(answers[:60], lines, strict=False))
    ]
    scores.append(QualityScore(replaced.id, answer_sha(lines[5]), 2, "r", "judge", "p"))
    scores.append(QualityScore(answers[4].id, answer_sha(lines[4]), 9, "r", "judge", "p"))
    (data / "quality.jsonl").write_text("".join(s.to_json() + "\n" for s in scores))
    state = ForceState(topics={"ownership", "async"}, dropped={questions[11].id})
    save_force_state(Project(root).force_state("questions"), state)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


async def test_split_writes_the_same_files_as_before_its_compact_rows(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", pipeline="eval_ratio = 0.2")
    _write_mixed(root)
    result = await overbrainer(root, "split", url=URL)
    assert result.code == 0, result.stderr
    # What `split` wrote before it kept compact rows (records held whole, texts held whole),
    # run on this very project: the line and both files, byte for byte.
    assert result.out_lines == [EXPECTED_LINE]
    data = root / "data"
    assert (_digest(data / "train.jsonl"), _digest(data / "eval.jsonl")) == EXPECTED_DIGESTS


EXPECTED_LINE = (
    "split: 182 train, 24 eval, 24 excluded (truncated 11, quality 13), 3 orphaned,"
    " 17 moved to keep near-duplicates together"
)
EXPECTED_DIGESTS = ("13a32a6b67bae2f2", "af71dd8c0607aa83")


def _set_seed(root: Path, seed: int) -> None:
    config = root / "overbrainer.toml"
    config.write_text(config.read_text().replace("[pipeline]\n", f"[pipeline]\nseed = {seed}\n"))


async def test_kill_9_while_split_writes_leaves_each_file_old_or_new_whole(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    write_answered(root, 4_000, topics=("ownership", "async"))
    data = root / "data"
    # Answers of 4 kB each: train takes long enough to write (16 MB, fsync'd) to be seen.
    long = [
        attrs.evolve(a, messages=(a.messages[0], attrs.evolve(a.messages[1], content="A" * 4000)))
        for a in read_examples(root)
    ]
    (data / "answers.jsonl").write_text("".join(a.to_json() + "\n" for a in long))
    first = await overbrainer(root, "split", url=URL)
    assert first.code == 0, first.stderr
    old = {name: (data / f"{name}.jsonl").read_bytes() for name in ("train", "eval")}
    _set_seed(root, 7)  # the next split writes other files

    def writing() -> bool:
        return any(path.name.endswith(".tmp") for path in data.iterdir())

    async with trio.open_nursery() as nursery:
        process = await start(nursery, root, "split", url=URL)
        await wait_until(lambda: writing() or process.poll() is not None, every=0.002)
        assert process.poll() is None, "split ended before it was seen writing"
        os.kill(process.pid, signal.SIGKILL)
        with trio.fail_after(10):
            assert await process.wait() == -signal.SIGKILL

    answers = [
        Example.from_json(line) for line in (data / "answers.jsonl").read_text().splitlines()
    ]
    usable = [a for a in answers if a.meta.excluded is None]
    train, evaluation = stratify(usable, 0.1, 7)
    stored = (data / "answers.jsonl").read_bytes().splitlines()
    line_of = {a.id: line for a, line in zip(answers, stored, strict=True)}
    new = {
        name: b"".join(line_of[a.id] + b"\n" for a in chosen)
        for name, chosen in (("train", train), ("eval", evaluation))
    }
    assert new != old
    for name in ("train", "eval"):
        assert (data / f"{name}.jsonl").read_bytes() in (old[name], new[name]), name

    again = await overbrainer(root, "split", url=URL)
    assert again.code == 0, again.stderr
    for name in ("train", "eval"):
        assert (data / f"{name}.jsonl").read_bytes() == new[name], name
