"""Eval questions: what the child is asked and what the parent answered (§A.4)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from overbrainer.compare.reasoning import strip_reasoning
from overbrainer.storage.records import Example


@attrs.frozen
class ChatMessage:
    """One message sent to the child: `system` or `user`."""

    role: str
    content: str

    def to_dict(self) -> dict[str, str]:
        """The message as JSON fields."""
        return {"role": self.role, "content": self.content}


@attrs.frozen
class EvalQuestion:
    """One held-out question: the messages before the answer, and the parent's answer."""

    id: str
    topic: str
    messages: tuple[ChatMessage, ...]
    parent: str
    parent_input_tokens: int
    parent_output_tokens: int

    @property
    def question(self) -> str:
        """The text shown to the judge: the last user message."""
        return next(m.content for m in reversed(self.messages) if m.role == "user")

    def to_dict(self) -> dict[str, Any]:
        """The fields of `setup.json`'s `questions`, in order."""
        return {
            "id": self.id,
            "topic": self.topic,
            "messages": [m.to_dict() for m in self.messages],
            "parent": self.parent,
            "parent_input_tokens": self.parent_input_tokens,
            "parent_output_tokens": self.parent_output_tokens,
        }

    @classmethod
    def from_dict(cls, raw: Any) -> EvalQuestion:
        """A question of `setup.json`; `ValueError` when it is not one."""
        if not isinstance(raw, dict):
            raise ValueError("a question is not an object")
        try:
            messages = tuple(
                ChatMessage(_text(m["role"]), _text(m["content"])) for m in raw["messages"]
            )
            question = cls(
                _text(raw["id"]),
                _text(raw["topic"]),
                messages,
                _text(raw["parent"]),
                _count(raw["parent_input_tokens"]),
                _count(raw["parent_output_tokens"]),
            )
        except (KeyError, TypeError) as error:
            raise ValueError(f"a question lacks or mistypes {error}") from None
        if not any(m.role == "user" for m in messages):
            raise ValueError(f"question {question.id} has no user message")
        return question


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("a text field")
    return value


def _count(value: Any) -> int:
    if type(value) is not int or value < 0:
        raise TypeError("a token count")
    return value


def eval_question(example: Example) -> EvalQuestion | None:
    """The question of one `eval.jsonl` record, or None without a user or assistant message."""
    first_assistant = next(
        (i for i, m in enumerate(example.messages) if m.role == "assistant"), None
    )
    if first_assistant is None:
        return None
    asked = tuple(
        ChatMessage(m.role, m.content)
        for m in example.messages[:first_assistant]
        if m.role in ("system", "user")
    )
    if not any(m.role == "user" for m in asked):
        return None
    last_answer = next(m for m in reversed(example.messages) if m.role == "assistant")
    return EvalQuestion(
        example.id,
        example.topic,
        asked,
        strip_reasoning(last_answer.content),
        example.meta.input_tokens,
        example.meta.output_tokens,
    )


def eval_questions(examples: Iterable[Example], limit: int | None = None) -> list[EvalQuestion]:
    """The valid questions in file order, the first `limit` of them when given."""
    found: list[EvalQuestion] = []
    for example in examples:
        if limit is not None and len(found) >= limit:
            break
        question = eval_question(example)
        if question is not None:
            found.append(question)
    return found
