"""The quality judge's scores: the `data/quality.jsonl` record, its keys, reading a reply."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import xxhash

from overbrainer.model import codec
from overbrainer.storage import read_records

MIN_SCORE = 1
MAX_SCORE = 10


def answer_sha(line: str) -> str:
    """The 16 hex digits of a stored answer line (XXH3-64): a re-answered question's line
    differs, so its old score no longer applies."""
    return xxhash.xxh3_64_hexdigest(line.encode("utf-8"))


def prompt_sha(template_source: str) -> str:
    """The 16 hex digits of the quality prompt's unrendered text (XXH3-64)."""
    return xxhash.xxh3_64_hexdigest(template_source.encode("utf-8"))


@codec.record("quality score")
@attrs.frozen
class QualityScore(codec.JsonRecord):
    """One line of `data/quality.jsonl`: the judge's score of one stored answer."""

    id: str
    answer_sha: str
    score: int
    reason: str
    model: str
    prompt_sha: str

    def same_work(self, sha: str, model: str, prompt: str) -> bool:
        """Whether this score is of this answer text by this judge model and prompt."""
        return (self.answer_sha, self.model, self.prompt_sha) == (sha, model, prompt)


def read_scores(path: Path) -> dict[str, QualityScore]:
    """The latest score of each answer ID (none when the file is missing). Blocking."""
    return {score.id: score for score in read_records(path, QualityScore.from_json)}


@attrs.frozen
class ScoreReply:
    """A parsed reply: the score (1–10) and the judge's reason ("" when none)."""

    score: int
    reason: str


_DECODER = json.JSONDecoder()


def parse_score(reply: str) -> ScoreReply | None:
    """The first JSON object, starting at any `{`, with an integer `score` in 1..10; else None.

    A score given as a whole number in a string or a float (`"8"`, `8.0`) is taken too: judges
    write either.
    """
    start = reply.find("{")
    while start >= 0:
        try:
            value, _ = _DECODER.raw_decode(reply, start)
        except ValueError:
            value = None
        if isinstance(value, dict):
            score = _whole(value.get("score"))
            if score is not None and MIN_SCORE <= score <= MAX_SCORE:
                reason = value.get("reason")
                return ScoreReply(score, reason.strip() if isinstance(reason, str) else "")
        start = reply.find("{", start + 1)
    return None


def _whole(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None
