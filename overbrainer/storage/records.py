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


def _object(value: Any, what: str, required: frozenset[str], optional: frozenset[str]) -> None:
    """Check that `value` is an object with exactly the allowed fields."""
    if type(value) is not dict:
        raise ValueError(f"{what} is not an object")
    keys = value.keys()
    if keys - required - optional:
        unknown = sorted(keys - required - optional)[0]
        raise ValueError(f"unknown field `{unknown}` in {what}")
    if required - keys:
        missing = sorted(required - keys)[0]
        raise ValueError(f"missing field `{missing}` in {what}")


def _str(value: Any, field: str) -> str:
    if type(value) is not str:
        raise ValueError(f"`{field}` is not a string")
    return value


def _u64(value: Any, field: str) -> int:
    if type(value) is not int or not 0 <= value <= _U64_MAX:
        raise ValueError(f"`{field}` is not an unsigned 64-bit integer")
    return value


def _choice(table: dict[str, Any], value: Any, field: str) -> Any:
    if type(value) is not str or value not in table:
        raise ValueError(f"`{field}` has an unknown value")
    return table[value]


def _enum_get(table: dict[str, E], value: Any) -> E | None:
    return table.get(value) if type(value) is str else None


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
        _object(raw, "subtopic", _SUBTOPIC_FIELDS, frozenset())
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
        if type(raw) is dict and raw.keys() == _QUESTION_FIELDS:
            values = (raw["id"], raw["topic"], raw["subtopic_id"], raw["subtopic"], raw["text"])
            if all(type(value) is str for value in values):
                return cls(*values)
        _object(raw, "question", _QUESTION_FIELDS, frozenset())
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

    @classmethod
    def _parse(cls, raw: Any) -> Message:
        # The common case in few operations; anything unusual takes the detailed path.
        if _plain_message(raw):
            return cls(_ROLES[raw["role"]], raw["content"], raw.get("reasoning_content"))
        return cls._check(raw)

    @classmethod
    def _check(cls, raw: Any) -> Message:
        _object(raw, "message", _MESSAGE_REQUIRED, _MESSAGE_OPTIONAL)
        role: Role = _choice(_ROLES, raw["role"], "role")
        reasoning = raw.get("reasoning_content")
        if reasoning is not None:
            _str(reasoning, "reasoning_content")
        return cls(role, _str(raw["content"], "content"), reasoning)


def _plain_message(raw: Any) -> bool:
    """Whether `raw` is a valid message with nothing unusual (`Message._parse`'s fast path)."""
    if type(raw) is not dict or not raw.keys() <= _MESSAGE_ALL:
        return False
    role = raw.get("role")
    content = raw.get("content")
    reasoning = raw.get("reasoning_content")
    return (
        type(role) is str
        and role in _ROLES
        and type(content) is str
        and (reasoning is None or type(reasoning) is str)
    )


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
        if type(raw) is dict and raw.keys() <= _META_ALL:
            model = raw.get("model")
            tokens_in = raw.get("input_tokens")
            tokens_out = raw.get("output_tokens")
            finish = _enum_get(_FINISH, raw.get("finish_reason"))
            kind = _enum_get(_KIND, raw.get("reasoning_kind"))
            excluded = raw.get("excluded")
            exclusion = None if excluded is None else _enum_get(_EXCLUSION, excluded)
            if (
                type(model) is str
                and type(tokens_in) is int
                and 0 <= tokens_in <= _U64_MAX
                and type(tokens_out) is int
                and 0 <= tokens_out <= _U64_MAX
                and finish is not None
                and kind is not None
                and (excluded is None or exclusion is not None)
            ):
                return cls(model, tokens_in, tokens_out, finish, kind, exclusion)
        return cls._check(raw)

    @classmethod
    def _check(cls, raw: Any) -> Meta:
        _object(raw, "meta", _META_REQUIRED, _META_OPTIONAL)
        excluded = raw.get("excluded")
        return cls(
            _str(raw["model"], "model"),
            _u64(raw["input_tokens"], "input_tokens"),
            _u64(raw["output_tokens"], "output_tokens"),
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
        raw = _load(line)
        if type(raw) is dict and raw.keys() == _EXAMPLE_FIELDS:
            id_, topic, subtopic = raw["id"], raw["topic"], raw["subtopic"]
            messages = raw["messages"]
            if (
                type(id_) is str
                and type(topic) is str
                and type(subtopic) is str
                and type(messages) is list
            ):
                return cls(
                    id_,
                    topic,
                    subtopic,
                    tuple(map(Message._parse, messages)),
                    Meta._parse(raw["meta"]),
                )
        _object(raw, "example", _EXAMPLE_FIELDS, frozenset())
        messages = raw["messages"]
        if type(messages) is not list:
            raise ValueError("`messages` is not a list")
        return cls(
            _str(raw["id"], "id"),
            _str(raw["topic"], "topic"),
            _str(raw["subtopic"], "subtopic"),
            tuple(Message._parse(message) for message in messages),
            Meta._parse(raw["meta"]),
        )


def example_head(line: str | bytes) -> tuple[str, str, str, Meta]:
    """The ID, topic, subtopic and meta of a whole, valid Example line (`ValueError`
    otherwise, as `Example.from_json` says), checked in full without building its messages.

    For `split`, which places answers by these fields only: building every message of
    100,000 answers costs a good part of reading them.
    """
    raw = _load(line)
    if type(raw) is dict and raw.keys() == _EXAMPLE_FIELDS:
        id_, topic, subtopic = raw["id"], raw["topic"], raw["subtopic"]
        messages = raw["messages"]
        if (
            type(id_) is str
            and type(topic) is str
            and type(subtopic) is str
            and type(messages) is list
            and all(map(_plain_message, messages))
        ):
            return id_, topic, subtopic, Meta._parse(raw["meta"])
    # Anything unusual: the full parse gives the same record or the same error.
    example = Example.from_json(line)
    return example.id, example.topic, example.subtopic, example.meta


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
    return Example.from_json(line).id


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
        _object(raw, "rejected subtopic", _REJECTED_SUBTOPIC_FIELDS, frozenset())
        return RejectedSubtopic(
            _str(raw["id"], "id"), _str(raw["topic"], "topic"), _str(raw["name"], "name")
        )
    if kind == "question":
        _object(raw, "rejected question", _REJECTED_QUESTION_FIELDS, frozenset())
        return RejectedQuestion(
            _str(raw["id"], "id"),
            _str(raw["topic"], "topic"),
            _str(raw["subtopic_id"], "subtopic_id"),
            _str(raw["text"], "text"),
        )
    if kind is None:
        raise ValueError("missing field `kind` in rejected record")
    raise ValueError("`kind` has an unknown value")
