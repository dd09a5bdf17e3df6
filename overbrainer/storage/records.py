"""The dataset's JSONL records, serialised byte for byte as the reference tool writes them.

Each record writes compact JSON (no spaces, raw UTF-8) with its fields in the reference's
order, and reads back only what the reference would accept: an unknown field, a missing field
or a value of the wrong type is a `ValueError`. As in the reference (serde's `Option` fields),
a missing `reasoning_content` or `meta.excluded` reads as null.
"""

from __future__ import annotations

import enum
import json
from typing import Any, Literal, TypeAlias, TypeVar

import attrs

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

# Mapped through this table so that every stored message shares one string per role.
_ROLES: dict[str, Role] = {"system": "system", "user": "user", "assistant": "assistant"}
_U64_MAX = 2**64 - 1
E = TypeVar("E", bound=enum.Enum)
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class Exclusion(enum.Enum):
    """Why an answer is kept out of training; the order is the summary line's order."""

    TRUNCATED = "truncated"
    EMPTY = "empty"
    REFUSED = "refused"
    NO_RAW_REASONING = "no_raw_reasoning"


_FINISH = {member.value: member for member in FinishReason}
_KIND = {member.value: member for member in ReasoningKind}
_EXCLUSION = {member.value: member for member in Exclusion}


def _load(line: str | bytes) -> Any:
    """Decode one line of JSON; a lone surrogate, which the reference refuses, is refused too."""
    if isinstance(line, bytes):
        line = line.decode("utf-8")  # UnicodeDecodeError is a ValueError
    try:
        value = json.loads(line)
    except (ValueError, RecursionError) as error:
        raise ValueError(f"not JSON: {error}") from None
    if "\\u" in line:  # only a \u escape can smuggle in a lone surrogate
        try:
            _dumps(value).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a string holds a lone surrogate") from None
    return value


def _object(value: Any, what: str, required: frozenset[str], allowed: frozenset[str]) -> None:
    """Check that `value` is an object with every `required` field and only `allowed` ones."""
    if type(value) is not dict:
        raise ValueError(f"{what} is not an object")
    keys = value.keys()
    if keys <= allowed and keys >= required:
        return
    if keys - allowed:
        raise ValueError(f"unknown field `{sorted(keys - allowed)[0]}` in {what}")
    raise ValueError(f"missing field `{sorted(required - keys)[0]}` in {what}")


def _str(value: Any, field: str) -> str:
    if type(value) is not str:
        raise ValueError(f"`{field}` is not a string")
    return value


def _choice(table: dict[str, E], value: Any, field: str) -> E:
    if type(value) is not str or value not in table:
        raise ValueError(f"`{field}` has an unknown value")
    return table[value]


_SUBTOPIC_FIELDS = frozenset(("id", "topic", "name"))


@attrs.frozen
class Subtopic:
    """One line of `data/subtopics.jsonl`."""

    id: str
    topic: str
    name: str

    def to_json(self) -> str:
        """The record as one compact JSON line (no newline)."""
        return _dumps({"id": self.id, "topic": self.topic, "name": self.name})

    @classmethod
    def from_json(cls, line: str | bytes) -> Subtopic:
        """Parse one line; `ValueError` when it is not exactly a Subtopic."""
        raw = _load(line)
        _object(raw, "subtopic", _SUBTOPIC_FIELDS, _SUBTOPIC_FIELDS)
        return cls(_str(raw["id"], "id"), _str(raw["topic"], "topic"), _str(raw["name"], "name"))


_QUESTION_FIELDS = frozenset(("id", "topic", "subtopic_id", "subtopic", "text"))


@attrs.frozen
class Question:
    """One line of `data/questions.jsonl`."""

    id: str
    topic: str
    subtopic_id: str
    subtopic: str
    text: str

    def to_json(self) -> str:
        """The record as one compact JSON line (no newline)."""
        return _dumps(
            {
                "id": self.id,
                "topic": self.topic,
                "subtopic_id": self.subtopic_id,
                "subtopic": self.subtopic,
                "text": self.text,
            }
        )

    @classmethod
    def from_json(cls, line: str | bytes) -> Question:
        """Parse one line; `ValueError` when it is not exactly a Question."""
        raw = _load(line)
        _object(raw, "question", _QUESTION_FIELDS, _QUESTION_FIELDS)
        return cls(
            _str(raw["id"], "id"),
            _str(raw["topic"], "topic"),
            _str(raw["subtopic_id"], "subtopic_id"),
            _str(raw["subtopic"], "subtopic"),
            _str(raw["text"], "text"),
        )


_MESSAGE_REQUIRED = frozenset(("role", "content"))
_MESSAGE_OPTIONAL = frozenset(("reasoning_content",))
_MESSAGE_ALL = _MESSAGE_REQUIRED | _MESSAGE_OPTIONAL


@attrs.frozen
class Message:
    """A chat message in Axolotl's `chat_template` format."""

    role: Role
    content: str
    reasoning_content: str | None = None

    def _fields(self) -> dict[str, str]:
        fields = {"role": self.role, "content": self.content}
        if self.reasoning_content is not None:
            fields["reasoning_content"] = self.reasoning_content
        return fields


def _check_message(raw: Any) -> None:
    """Check one message of an example (`ValueError` naming what is wrong), building nothing."""
    _object(raw, "message", _MESSAGE_REQUIRED, _MESSAGE_ALL)
    role = raw["role"]
    if type(role) is not str or role not in _ROLES:
        raise ValueError("`role` has an unknown value")
    if type(raw["content"]) is not str:
        raise ValueError("`content` is not a string")
    reasoning = raw.get("reasoning_content")
    if reasoning is not None and type(reasoning) is not str:
        raise ValueError("`reasoning_content` is not a string")


_META_REQUIRED = frozenset(
    ("model", "input_tokens", "output_tokens", "finish_reason", "reasoning_kind")
)
_META_OPTIONAL = frozenset(("excluded",))
_META_ALL = _META_REQUIRED | _META_OPTIONAL


@attrs.frozen
class Meta:
    """How an answer was produced, and why it is kept out of training if it is."""

    model: str
    input_tokens: int
    output_tokens: int
    finish_reason: FinishReason
    reasoning_kind: ReasoningKind
    excluded: Exclusion | None = None

    def _fields(self) -> dict[str, object]:
        return {
            "model": self.model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "finish_reason": self.finish_reason.value,
            "reasoning_kind": self.reasoning_kind.value,
            "excluded": None if self.excluded is None else self.excluded.value,
        }

    @classmethod
    def _parse(cls, raw: Any) -> Meta:
        # Checked inline, not through the helpers: this runs for every answer read.
        _object(raw, "meta", _META_REQUIRED, _META_ALL)
        model, tokens_in, tokens_out = raw["model"], raw["input_tokens"], raw["output_tokens"]
        if type(model) is not str:
            raise ValueError("`model` is not a string")
        if type(tokens_in) is not int or not 0 <= tokens_in <= _U64_MAX:
            raise ValueError("`input_tokens` is not an unsigned 64-bit integer")
        if type(tokens_out) is not int or not 0 <= tokens_out <= _U64_MAX:
            raise ValueError("`output_tokens` is not an unsigned 64-bit integer")
        excluded = raw.get("excluded")
        return cls(
            model,
            tokens_in,
            tokens_out,
            _choice(_FINISH, raw["finish_reason"], "finish_reason"),
            _choice(_KIND, raw["reasoning_kind"], "reasoning_kind"),
            None if excluded is None else _choice(_EXCLUSION, excluded, "excluded"),
        )


_EXAMPLE_FIELDS = frozenset(("id", "topic", "subtopic", "messages", "meta"))


@attrs.frozen
class Example:
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

    def to_json(self) -> str:
        """The record as one compact JSON line (no newline)."""
        return _dumps(
            {
                "id": self.id,
                "topic": self.topic,
                "subtopic": self.subtopic,
                "messages": [message._fields() for message in self.messages],
                "meta": self.meta._fields(),
            }
        )

    @classmethod
    def from_json(cls, line: str | bytes) -> Example:
        """Parse one line; `ValueError` when it is not exactly an Example."""
        raw, meta = _example_parts(line)
        messages = tuple(map(_checked_message, raw["messages"]))
        return cls(raw["id"], raw["topic"], raw["subtopic"], messages, meta)


def _checked_message(raw: dict[str, Any]) -> Message:
    """A message `_check_message` has passed."""
    return Message(_ROLES[raw["role"]], raw["content"], raw.get("reasoning_content"))


def _example_parts(line: str | bytes) -> tuple[dict[str, Any], Meta]:
    """The checked JSON object of an Example line, and its meta; `ValueError` when invalid."""
    raw = _load(line)
    _object(raw, "example", _EXAMPLE_FIELDS, _EXAMPLE_FIELDS)
    if type(raw["id"]) is not str:
        raise ValueError("`id` is not a string")
    if type(raw["topic"]) is not str:
        raise ValueError("`topic` is not a string")
    if type(raw["subtopic"]) is not str:
        raise ValueError("`subtopic` is not a string")
    messages = raw["messages"]
    if type(messages) is not list:
        raise ValueError("`messages` is not a list")
    for message in messages:
        _check_message(message)
    return raw, Meta._parse(raw["meta"])


def example_head(line: str | bytes) -> tuple[str, str, str, Meta]:
    """The ID, topic, subtopic and meta of a whole, valid Example line (`ValueError`
    otherwise, as `Example.from_json` says), checked in full without building its messages.

    For `split`, which places answers by these fields only: building every message of
    100,000 answers costs a good part of reading them.
    """
    raw, meta = _example_parts(line)
    return raw["id"], raw["topic"], raw["subtopic"], meta


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
    return str(_example_parts(line)[0]["id"])


_REJECTED_SUBTOPIC_FIELDS = frozenset(("kind", "id", "topic", "name"))


@attrs.frozen
class RejectedSubtopic:
    """A subtopic the user deleted; the subtopics stage never stores its ID again."""

    id: str
    topic: str
    name: str

    def to_json(self) -> str:
        """The record as one compact JSON line (no newline), tagged `kind: subtopic`."""
        return _dumps({"kind": "subtopic", "id": self.id, "topic": self.topic, "name": self.name})

    @classmethod
    def from_json(cls, line: str | bytes) -> RejectedSubtopic:
        """Parse one line; `ValueError` when it is not exactly a rejected subtopic."""
        rejected = rejected_from_json(line)
        if not isinstance(rejected, RejectedSubtopic):
            raise ValueError("not a rejected subtopic")
        return rejected


_REJECTED_QUESTION_FIELDS = frozenset(("kind", "id", "topic", "subtopic_id", "text"))


@attrs.frozen
class RejectedQuestion:
    """A question the user deleted; its text counts as already accepted in its topic."""

    id: str
    topic: str
    subtopic_id: str
    text: str

    def to_json(self) -> str:
        """The record as one compact JSON line (no newline), tagged `kind: question`."""
        return _dumps(
            {
                "kind": "question",
                "id": self.id,
                "topic": self.topic,
                "subtopic_id": self.subtopic_id,
                "text": self.text,
            }
        )

    @classmethod
    def from_json(cls, line: str | bytes) -> RejectedQuestion:
        """Parse one line; `ValueError` when it is not exactly a rejected question."""
        rejected = rejected_from_json(line)
        if not isinstance(rejected, RejectedQuestion):
            raise ValueError("not a rejected question")
        return rejected


Rejected: TypeAlias = RejectedSubtopic | RejectedQuestion
"""One line of `data/rejected.jsonl`."""


def rejected_from_json(line: str | bytes) -> Rejected:
    """Parse one line of `data/rejected.jsonl` by its `kind` tag; `ValueError` when invalid."""
    raw = _load(line)
    if type(raw) is not dict:
        raise ValueError("rejected record is not an object")
    kind = raw.get("kind")
    if kind == "subtopic":
        _object(raw, "rejected subtopic", _REJECTED_SUBTOPIC_FIELDS, _REJECTED_SUBTOPIC_FIELDS)
        return RejectedSubtopic(
            _str(raw["id"], "id"), _str(raw["topic"], "topic"), _str(raw["name"], "name")
        )
    if kind == "question":
        _object(raw, "rejected question", _REJECTED_QUESTION_FIELDS, _REJECTED_QUESTION_FIELDS)
        return RejectedQuestion(
            _str(raw["id"], "id"),
            _str(raw["topic"], "topic"),
            _str(raw["subtopic_id"], "subtopic_id"),
            _str(raw["text"], "text"),
        )
    if kind is None:
        raise ValueError("missing field `kind` in rejected record")
    raise ValueError("`kind` has an unknown value")
