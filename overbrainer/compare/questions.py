"""Eval questions: what the child is asked and what the parent answered (§A.4)."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from overbrainer.compare.reasoning import strip_reasoning
from overbrainer.model import codec
from overbrainer.storage import Example


@codec.record("message", strict=False)
@attrs.frozen
class ChatMessage(codec.JsonRecord):
    """One message sent to the child: `system` or `user`."""

    role: str
    content: str


@codec.record("question", strict=False, check=lambda question: _check_question(question))
@attrs.frozen
class EvalQuestion(codec.JsonRecord):
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


def _check_question(question: EvalQuestion) -> None:
    if not any(m.role == "user" for m in question.messages):
        raise ValueError(f"question {question.id} has no user message")


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
