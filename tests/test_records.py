"""Records: byte-exact JSON in the reference's field order, strict parsing, round trips."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from overbrainer.storage.records import (
    Example,
    Exclusion,
    FinishReason,
    Message,
    Meta,
    Question,
    ReasoningKind,
    RejectedQuestion,
    RejectedSubtopic,
    Subtopic,
    example_head,
    example_id,
    rejected_from_json,
)

SUBTOPIC_LINE = '{"id":"d410fa975affdd150daf206922cfd8cc","topic":"ownership","name":"Borrowing"}'
QUESTION_LINE = (
    '{"id":"2b7f16567ded37292cec9b2ae9726e6a","topic":"ownership",'
    '"subtopic_id":"d410fa975affdd150daf206922cfd8cc","subtopic":"Borrowing",'
    '"text":"What is a borrow in Rust?"}'
)
EXAMPLE_LINE = (
    '{"id":"2b7f16567ded37292cec9b2ae9726e6a","topic":"ownership","subtopic":"Borrowing",'
    '"messages":[{"role":"user","content":"What is a borrow in Rust?"},'
    '{"role":"assistant","content":"A reference…","reasoning_content":"The caller keeps…"}],'
    '"meta":{"model":"deepseek/deepseek-r1","input_tokens":41,"output_tokens":812,'
    '"finish_reason":"stop","reasoning_kind":"raw","excluded":null}}'
)
EXAMPLE = Example(
    id="2b7f16567ded37292cec9b2ae9726e6a",
    topic="ownership",
    subtopic="Borrowing",
    messages=(
        Message("user", "What is a borrow in Rust?"),
        Message("assistant", "A reference…", "The caller keeps…"),
    ),
    meta=Meta("deepseek/deepseek-r1", 41, 812, FinishReason.STOP, ReasoningKind.RAW, None),
)


def test_subtopic_json_is_the_reference_line() -> None:
    subtopic = Subtopic("d410fa975affdd150daf206922cfd8cc", "ownership", "Borrowing")
    assert subtopic.to_json() == SUBTOPIC_LINE
    assert Subtopic.from_json(SUBTOPIC_LINE) == subtopic


def test_question_json_is_the_reference_line() -> None:
    question = Question(
        "2b7f16567ded37292cec9b2ae9726e6a",
        "ownership",
        "d410fa975affdd150daf206922cfd8cc",
        "Borrowing",
        "What is a borrow in Rust?",
    )
    assert question.to_json() == QUESTION_LINE
    assert Question.from_json(QUESTION_LINE) == question


def test_example_json_is_the_reference_line_with_raw_utf8() -> None:
    assert EXAMPLE.to_json() == EXAMPLE_LINE
    assert "\\u" not in EXAMPLE.to_json()
    assert Example.from_json(EXAMPLE_LINE) == EXAMPLE
    assert Example.from_json(EXAMPLE_LINE.encode()) == EXAMPLE
    assert EXAMPLE.usable


def test_an_excluded_example_writes_its_reason_and_a_system_message() -> None:
    example = Example(
        "i",
        "t",
        "s",
        (Message("system", "Be brief."), Message("user", "Q"), Message("assistant", "", "x")),
        Meta("m", 0, 4096, FinishReason.LENGTH, ReasoningKind.SUMMARY, Exclusion.TRUNCATED),
    )
    line = example.to_json()
    assert line == (
        '{"id":"i","topic":"t","subtopic":"s","messages":[{"role":"system","content":"Be brief."},'
        '{"role":"user","content":"Q"},{"role":"assistant","content":"","reasoning_content":"x"}],'
        '"meta":{"model":"m","input_tokens":0,"output_tokens":4096,"finish_reason":"length",'
        '"reasoning_kind":"summary","excluded":"truncated"}}'
    )
    assert Example.from_json(line) == example
    assert not example.usable


def test_control_chars_escape_like_serde_json() -> None:
    subtopic = Subtopic("i", "t", 'a"b\\c\nd\te\x01f\x7fg\u2028h/')
    assert subtopic.to_json() == (
        '{"id":"i","topic":"t","name":"a\\"b\\\\c\\nd\\te\\u0001f\x7fg\u2028h/"}'
    )


def test_rejected_records_are_tagged_by_kind() -> None:
    subtopic = RejectedSubtopic("d410fa975affdd150daf206922cfd8cc", "ownership", "Borrowing")
    question = RejectedQuestion("q", "ownership", "s", "What?")
    assert subtopic.to_json() == (
        '{"kind":"subtopic","id":"d410fa975affdd150daf206922cfd8cc","topic":"ownership",'
        '"name":"Borrowing"}'
    )
    assert question.to_json() == (
        '{"kind":"question","id":"q","topic":"ownership","subtopic_id":"s","text":"What?"}'
    )
    assert rejected_from_json(subtopic.to_json()) == subtopic
    assert rejected_from_json(question.to_json()) == question
    assert RejectedSubtopic.from_json(subtopic.to_json()) == subtopic
    assert RejectedQuestion.from_json(question.to_json()) == question
    with pytest.raises(ValueError, match="not a rejected question"):
        RejectedQuestion.from_json(subtopic.to_json())
    with pytest.raises(ValueError, match="not a rejected subtopic"):
        RejectedSubtopic.from_json(question.to_json())


def test_optional_fields_may_be_missing_as_in_the_reference() -> None:
    raw = json.loads(EXAMPLE_LINE)
    del raw["meta"]["excluded"]
    del raw["messages"][1]["reasoning_content"]
    example = Example.from_json(json.dumps(raw))
    assert example.meta.excluded is None
    assert example.messages[1].reasoning_content is None
    # Written back, `excluded` is always present and `reasoning_content` left out.
    assert '"excluded":null' in example.to_json()
    assert "reasoning_content" not in example.to_json()


def _mutate(line: str, change: str) -> str:
    raw = json.loads(line)
    exec(change, {"raw": raw})
    return json.dumps(raw, ensure_ascii=False)


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ("raw['extra'] = 1", "unknown field `extra` in example"),
        ("del raw['topic']", "missing field `topic` in example"),
        ("raw['id'] = 5", "`id` is not a string"),
        ("raw['messages'] = {}", "`messages` is not a list"),
        ("raw['messages'][0]['role'] = 'bot'", "`role` has an unknown value"),
        ("raw['messages'][0]['role'] = ['user']", "`role` has an unknown value"),
        ("raw['messages'][0]['name'] = 'x'", "unknown field `name` in message"),
        ("del raw['messages'][0]['content']", "missing field `content` in message"),
        ("raw['messages'][1]['reasoning_content'] = 3", "`reasoning_content` is not a string"),
        ("raw['messages'][0] = 'user'", "message is not an object"),
        ("raw['meta']['input_tokens'] = -1", "`input_tokens` is not an unsigned 64-bit"),
        ("raw['meta']['output_tokens'] = 2**64", "`output_tokens` is not an unsigned 64-bit"),
        ("raw['meta']['input_tokens'] = 41.0", "`input_tokens` is not an unsigned 64-bit"),
        ("raw['meta']['input_tokens'] = True", "`input_tokens` is not an unsigned 64-bit"),
        ("raw['meta']['finish_reason'] = 'end_turn'", "`finish_reason` has an unknown value"),
        ("raw['meta']['reasoning_kind'] = None", "`reasoning_kind` has an unknown value"),
        ("raw['meta']['excluded'] = 'bad'", "`excluded` has an unknown value"),
        ("raw['meta']['excluded'] = {}", "`excluded` has an unknown value"),
        ("raw['meta']['cost'] = 0.1", "unknown field `cost` in meta"),
        ("del raw['meta']['model']", "missing field `model` in meta"),
        ("raw['meta'] = None", "meta is not an object"),
    ],
)
def test_an_example_with_anything_wrong_is_refused(change: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        Example.from_json(_mutate(EXAMPLE_LINE, change))
    with pytest.raises(ValueError, match=error):
        example_head(_mutate(EXAMPLE_LINE, change))


def test_the_head_of_an_example_is_its_id_topic_subtopic_and_meta() -> None:
    assert example_head(EXAMPLE_LINE) == (
        "2b7f16567ded37292cec9b2ae9726e6a",
        "ownership",
        "Borrowing",
        EXAMPLE.meta,
    )
    # Optional fields missing, and a null `reasoning_content`, read as `from_json` reads them.
    raw = json.loads(EXAMPLE_LINE)
    del raw["meta"]["excluded"]
    raw["messages"][1]["reasoning_content"] = None
    raw["messages"].append({"role": "system", "content": "s"})
    assert example_head(json.dumps(raw)) == example_head(EXAMPLE_LINE)
    assert example_head(EXAMPLE_LINE.encode()) == example_head(EXAMPLE_LINE)
    for line in ("[]", '{"id":"a"', "{}", EXAMPLE_LINE.replace("A reference", "\\ud800")):
        with pytest.raises(ValueError):
            example_head(line)


def test_the_id_of_an_example_is_read_from_its_compact_head_or_in_full() -> None:
    expected = "2b7f16567ded37292cec9b2ae9726e6a"
    assert example_id(EXAMPLE_LINE) == expected
    # Any other shape (spaces, another key order, bytes) is parsed and checked in full.
    raw = json.loads(EXAMPLE_LINE)
    assert example_id(json.dumps(raw)) == expected
    assert example_id(json.dumps({"meta": raw.pop("meta"), **raw})) == expected
    assert example_id(EXAMPLE_LINE.encode()) == expected
    upper = EXAMPLE_LINE.replace(expected, expected.upper())
    assert example_id(upper) == expected.upper()
    for line in ("[]", '{"id":"a"', "{}", EXAMPLE_LINE[:-1], json.dumps({**raw, "x": 1})):
        with pytest.raises(ValueError):
            example_id(line)


@pytest.mark.parametrize(
    "line",
    [
        "",
        "[]",
        "null",
        '{"id":"a","topic":"t"',
        '{"id":"a","topic":"t","name":"n","x":1}',
        '{"id":"a","topic":"t"}',
        '{"id":"a","topic":"t","name":null}',
        '{"id":"a","topic":"t","name":"\\ud800"}',
        b'{"id":"a","topic":"t","name":"\xff"}',
    ],
)
def test_a_subtopic_with_anything_wrong_is_refused(line: str | bytes) -> None:
    with pytest.raises(ValueError):
        Subtopic.from_json(line)


def test_a_surrogate_pair_escape_is_a_valid_char() -> None:
    subtopic = Subtopic.from_json('{"id":"a","topic":"t","name":"\\ud83d\\ude00"}')
    assert subtopic.name == "😀"
    assert subtopic.to_json() == '{"id":"a","topic":"t","name":"😀"}'


@pytest.mark.parametrize(
    "line",
    [
        '{"id":"a","topic":"t","name":"n"}',
        '{"kind":"answer","id":"a"}',
        '{"kind":"subtopic","id":"a","topic":"t"}',
        '{"kind":"subtopic","id":"a","topic":"t","name":"n","text":"x"}',
        '{"kind":"question","id":"a","topic":"t","subtopic_id":"s","text":"x","name":"n"}',
        '{"kind":"question","id":"a","topic":"t","subtopic_id":7,"text":"x"}',
    ],
)
def test_a_rejected_record_with_anything_wrong_is_refused(line: str) -> None:
    with pytest.raises(ValueError):
        rejected_from_json(line)


texts = st.text()
messages = st.builds(
    Message,
    st.sampled_from(["system", "user", "assistant"]),
    texts,
    st.none() | texts,
)
metas = st.builds(
    Meta,
    texts,
    st.integers(0, 2**64 - 1),
    st.integers(0, 2**64 - 1),
    st.sampled_from(FinishReason),
    st.sampled_from(ReasoningKind),
    st.none() | st.sampled_from(Exclusion),
)
examples = st.builds(Example, texts, texts, texts, st.lists(messages, max_size=4).map(tuple), metas)


@given(examples)
def test_examples_round_trip(example: Example) -> None:
    line = example.to_json()
    assert "\n" not in line
    assert Example.from_json(line) == example
    assert Example.from_json(line).to_json() == line
    assert example_head(line) == (example.id, example.topic, example.subtopic, example.meta)


@given(st.builds(Question, texts, texts, texts, texts, texts))
def test_questions_round_trip(question: Question) -> None:
    assert Question.from_json(question.to_json()) == question


@given(st.builds(Subtopic, texts, texts, texts) | st.builds(RejectedSubtopic, texts, texts, texts))
def test_subtopics_and_rejected_subtopics_round_trip(
    record: Subtopic | RejectedSubtopic,
) -> None:
    assert type(record).from_json(record.to_json()) == record
