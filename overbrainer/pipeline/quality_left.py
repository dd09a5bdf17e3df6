"""What `quality` has left to score, read from the IDs, topics and hashes of the stored lines.

Parsing every answer in full only to find each one scored cost a million-answer project a
minute and gigabytes; this keeps the latest score of each answer as two integers and builds
an `Example` only for an answer still to score.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from itertools import repeat
from operator import itemgetter
from pathlib import Path
from typing import TypeVar

import xxhash

from overbrainer.pipeline.quality_scores import QualityScore
from overbrainer.storage import Example, Key, answer_heads, fold_lines, id_key, scan_heads

__all__ = ["NOT_THIS_WORK", "latest_work", "left_to_score", "scored_left"]

T = TypeVar("T")

NOT_THIS_WORK = -1
"""The latest score of an answer is by another judge model or prompt."""

_SCORE = re.compile(rb'\{"id":"([0-9a-f]{32})","answer_sha":"([0-9a-f]{16})","score":')
_SHA = re.compile(r"[0-9a-f]{16}")


def latest_work(path: Path, model: str, prompt: str) -> dict[Key, int]:
    """For each answer ID's latest score: the answer hash it scored (as an integer) when
    `model` scored it with the prompt `prompt`, else `NOT_THIS_WORK`. Blocking: reads `path`.
    """
    # The end of a line this judge and prompt wrote, as the record's writer lays it out.
    end = f',"model":{json.dumps(model, ensure_ascii=False)},"prompt_sha":"{prompt}"}}'
    tail = end.encode("utf-8")

    def fast(line: bytes, start: int, end: int) -> tuple[Key, int] | None:
        match = _SCORE.match(line, start, end)
        if match is None or not line.endswith(tail, start, end):
            return None
        return hash(match[1]), int(match[2], 16)

    def full(text: str) -> tuple[Key, int]:
        score = QualityScore.from_json(text)
        same = score.model == model and score.prompt_sha == prompt
        sha = int(score.answer_sha, 16) if same and _SHA.fullmatch(score.answer_sha) else -1
        return id_key(score.id), sha

    latest: dict[Key, int] = {}
    if fold_lines(path, lambda lines: _take_scores(latest, lines, tail)):
        return latest
    latest.clear()
    for (key, sha), _, _, _ in scan_heads(path, fast, full):
        latest[key] = sha
    return latest


# Where the fields of a score line lie, as the record's writer lays it out.
_ID, _ANSWER_SHA, _HEAD_LENGTH = slice(7, 39), slice(55, 71), 81
_FIXED = (
    (slice(0, 7), b'{"id":"'),
    (slice(39, 55), b'","answer_sha":"'),
    (slice(71, 81), b'","score":'),
)


def _take_scores(latest: dict[Key, int], lines: list[bytes], tail: bytes) -> bool:
    """`latest_work`'s entries for a block of score lines, each by this judge and prompt (as
    `fast` takes them), in a few calls over the block; False when a line is not that."""
    if min(map(len, lines)) < _HEAD_LENGTH + len(tail):
        return False
    if not all(map(bytes.endswith, lines, repeat(tail))):
        return False
    for where, text in _FIXED:
        if b"".join(map(itemgetter(where), lines)) != text * len(lines):
            return False
    ids = list(map(itemgetter(_ID), lines))
    shas = list(map(itemgetter(_ANSWER_SHA), lines))
    if not _is_hex(b"".join(ids)) or not _is_hex(b"".join(shas)):
        return False
    latest.update(zip(map(hash, ids), map(int, shas, repeat(16)), strict=True))
    return True


def _is_hex(text: bytes) -> bool:
    """Whether `text` is lowercase hex digits only."""
    return not text.translate(None, b"0123456789abcdef")


def scored_left(
    answers: Path, scores: dict[Key, int], topics: AbstractSet[str], redo: AbstractSet[str]
) -> tuple[list[tuple[Example, str]], int]:
    """The usable current answers of `topics` whose latest score in `scores` is not of their
    line (or that are in `redo`), each with its line's hash, in file order; and how many
    others there are. `scores` is `latest_work`'s, and is changed. Blocking: reads `answers`.
    """
    return left_to_score(answers, scores, topics, redo, Example.from_json)


def left_to_score(
    answers: Path,
    scores: dict[Key, int],
    topics: AbstractSet[str],
    redo: AbstractSet[str],
    take: Callable[[bytes], T],
) -> tuple[list[tuple[T, str]], int]:
    """`scored_left` with `take` of each line to score instead of its record (what a caller
    that needs less than the whole record keeps of it)."""
    redo_keys = {id_key(found) for found in redo}
    pending: dict[Key, tuple[T, str]] = {}
    skipped = 0
    for (key, topic, usable), view, start, end in answer_heads(answers):
        known = scores.get(key, NOT_THIS_WORK)
        if pending.pop(key, None) is None and known < NOT_THIS_WORK:
            # The earlier record of this ID was counted as scored: this one takes its place.
            skipped -= 1
            known = _uncounted(known)
            scores[key] = known
        if topic not in topics or not usable:
            continue
        line = view[start:end]
        sha = xxhash.xxh3_64_intdigest(line)
        if known == sha and key not in redo_keys:
            skipped += 1
            scores[key] = _uncounted(sha)
        else:
            pending[key] = (take(bytes(line)), f"{sha:016x}")
    return list(pending.values()), skipped


def _uncounted(value: int) -> int:
    """Switches a hash between counted and not (a counted one is stored below -1)."""
    return -2 - value
