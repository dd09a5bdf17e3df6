"""Reading the quality judge's replies, and the stand-in answering the quality prompt."""

from __future__ import annotations

import json

import pytest

from overbrainer.devtools.stub_model import default_reply
from overbrainer.devtools.stub_script import Json, Recorded
from overbrainer.pipeline.quality_scores import QualityScore, ScoreReply, parse_score
from overbrainer.project.templates import default_text, parse_template


@pytest.mark.parametrize(
    ("reply", "parsed"),
    [
        ('{"score": 8, "reason": " Correct. "}', ScoreReply(8, "Correct.")),
        ('Sure! ```json\n{"score": 3, "reason": "wrong"}\n```', ScoreReply(3, "wrong")),
        ('{"score": "9"}', ScoreReply(9, "")),
        ('{"score": 7.0, "reason": 5}', ScoreReply(7, "")),
        ('{"note": {"score": 11}} then {"score": 10, "reason": "r"}', ScoreReply(10, "r")),
    ],
)
def test_a_reply_with_a_score_from_1_to_10_parses(reply: str, parsed: ScoreReply) -> None:
    assert parse_score(reply) == parsed


@pytest.mark.parametrize(
    "reply",
    ["8/10", '{"score": 0}', '{"score": 11}', '{"score": 7.5}', '{"score": true}', "{bad"],
)
def test_a_reply_without_such_a_score_does_not_parse(reply: str) -> None:
    assert parse_score(reply) is None


def test_a_score_line_is_compact_json_in_field_order() -> None:
    line = QualityScore("a" * 32, "0123456789abcdef", 8, "ok", "judge", "fedcba9876543210")
    assert line.to_json() == (
        '{"id":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","answer_sha":"0123456789abcdef","score":8,'
        '"reason":"ok","model":"judge","prompt_sha":"fedcba9876543210"}'
    )
    assert QualityScore.from_json(line.to_json()) == line


def test_the_stand_in_scores_the_default_quality_prompt() -> None:
    prompt = parse_template("quality.txt", default_text("quality.txt")).render(
        question="What is a borrow?", answer="A reference."
    )
    body: Json = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
    raw = json.dumps(body).encode()
    reply = default_reply(Recorded("POST", "/v1/chat/completions", {}, body, raw))
    parsed = parse_score(reply.content)
    assert parsed is not None and 5 <= parsed.score <= 10
