"""The dataset's JSONL records, serialised byte for byte as the reference tool writes them.

Each record writes compact JSON (no spaces, raw UTF-8) with its fields in the reference's
order, and reads back only what the reference would accept: an unknown field, a missing field
or a value of the wrong type is a `ValueError`. As in the reference (serde's `Option` fields),
a missing `reasoning_content` or `meta.excluded` reads as null.
"""

from __future__ import annotations

import enum
from typing import Literal, TypeAlias

import attrs

from overbrainer.model.codec import JsonRecord, decode_tagged, loads, record
from overbrainer.model.finish import FinishReason, ReasoningKind

__all__ = [
    "Example",
    "Exclusion",
    "FinishReason",
    "Message",
    "Meta",
    "Question",
    "ReasoningKind",
    "Rejected",
    "RejectedQuestion",
    "RejectedSubtopic",
    "Role",
    "Subtopic",
    "example_head",
    "example_id",
    "rejected_from_json",
]

Role: TypeAlias = Literal["system", "user", "assistant"]
"""Who wrote a chat message."""


class Exclusion(enum.Enum):
    """Why an answer is kept out of training; the order is the summary line's order."""

    TRUNCATED = "truncated"
    EMPTY = "empty"
    REFUSED = "refused"
    NO_RAW_REASONING = "no_raw_reasoning"


@record()
@attrs.frozen
class Subtopic(JsonRecord):
    """One line of `data/subtopics.jsonl`."""

    id: str
    topic: str
    name: str


@record()
@attrs.frozen
class Question(JsonRecord):
    """One line of `data/questions.jsonl`."""

    id: str
    topic: str
    subtopic_id: str
    subtopic: str
    text: str


@record(omit=("reasoning_content",))
@attrs.frozen
class Message:
    """A chat message in Axolotl's `chat_template` format."""

    role: Role
    content: str
    reasoning_content: str | None = None


@record()
@attrs.frozen
class Meta:
    """How an answer was produced, and why it is kept out of training if it is."""

    model: str
    input_tokens: int
    output_tokens: int
    finish_reason: FinishReason
    reasoning_kind: ReasoningKind
    excluded: Exclusion | None = None


@record()
@attrs.frozen
class Example(JsonRecord):
    """One line of `answers.jsonl`, `train.jsonl` and `eval.jsonl`: a question and its answer."""

    id: str
    topic: str
    subtopic: str
    messages: tuple[Message, ...]
    meta: Meta

    @property
    def usable(self) -> bool:
        """Whether the answer may train (it is not excluded)."""
        return self.meta.excluded is None


# What `example_head` reads: an Example line checked in full, its messages built only as these
# cheaper mutable values (an Example's frozen messages cost a good part of reading it).
@record("message")
@attrs.define
class _Said:
    role: Role
    content: str
    reasoning_content: str | None = None


@record("example")
@attrs.define
class _Head:
    id: str
    topic: str
    subtopic: str
    messages: list[_Said]
    meta: Meta


def example_head(line: str | bytes) -> tuple[str, str, str, Meta]:
    """The ID, topic, subtopic and meta of a whole, valid Example line (`ValueError`
    otherwise, as `Example.from_json` says): for `split`, which places answers by these only."""
    head = loads(_Head, line)
    return head.id, head.topic, head.subtopic, head.meta


# A line as `Example.to_json` (and the reference) writes it: a 32-hex `id` first, `meta` last.
_ID_START = '{"id":"'
_ID_END = len(_ID_START) + 32
_HEX = frozenset("0123456789abcdef")


def example_id(line: str | bytes) -> str:
    """The ID of a stored answer line, keeping nothing else; `ValueError` on a bad line.

    For resuming `answers`, which needs only the answered IDs: parsing 100,000 whole records
    would dominate its cost, so a line in `to_json`'s own compact shape is recognised by its
    `{"id":"<32 hex>","topic":"` start and `}}` end; any other line is parsed and checked in
    full (`Example.from_json`).
    """
    if (
        type(line) is str
        and line.startswith(_ID_START)
        and line.startswith('","topic":"', _ID_END)
        and line.endswith("}}")
    ):
        found = line[len(_ID_START) : _ID_END]
        if _HEX.issuperset(found):
            return found
    return loads(Example, line).id


@record("rejected subtopic", tag=("kind", "subtopic"))
@attrs.frozen
class RejectedSubtopic(JsonRecord):
    """A subtopic the user deleted; the subtopics stage never stores its ID again."""

    id: str
    topic: str
    name: str


@record("rejected question", tag=("kind", "question"))
@attrs.frozen
class RejectedQuestion(JsonRecord):
    """A question the user deleted; its text counts as already accepted in its topic."""

    id: str
    topic: str
    subtopic_id: str
    text: str


Rejected: TypeAlias = RejectedSubtopic | RejectedQuestion
"""One line of `data/rejected.jsonl`."""


def rejected_from_json(line: str | bytes) -> Rejected:
    """Parse one line of `data/rejected.jsonl` by its `kind` tag; `ValueError` when invalid."""
    rejected: Rejected = decode_tagged(
        (RejectedSubtopic, RejectedQuestion), line, "rejected record"
    )
    return rejected
