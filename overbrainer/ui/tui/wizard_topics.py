"""The wizard's step 5, pure: the topic list, and the form that adds or edits one topic."""

from __future__ import annotations

import attrs

from overbrainer.ui.tui.wizard_files import DEFAULT_QUESTIONS, DEFAULT_SUBTOPICS, TopicAnswer

FORM_FIELDS = (
    ("name", "name"),
    ("description", "description (optional)"),
    ("subtopics", "subtopics"),
    ("questions", "questions per subtopic"),
)


@attrs.frozen
class TopicForm:
    """A topic being typed: each field as text, the focused one, and the topic it edits."""

    name: str = ""
    description: str = ""
    subtopics: str = str(DEFAULT_SUBTOPICS)
    questions: str = str(DEFAULT_QUESTIONS)
    focus: int = 0
    editing: int | None = None
    """The index of the topic it edits; None: a new topic."""


def edited(text: str, key: str) -> str:
    """A text field after `key`: Backspace drops the last character, a printable one is added."""
    if key == "backspace":
        return text[:-1]
    if len(key) == 1 and key.isprintable():
        return text + key
    return text


def form_of(topics: tuple[TopicAnswer, ...], index: int) -> TopicForm:
    """The form that edits topic `index`."""
    topic = topics[index]
    return TopicForm(
        topic.name, topic.description, str(topic.subtopics), str(topic.questions), editing=index
    )


def form_key(form: TopicForm, key: str) -> TopicForm:
    """The form after `key` (↑↓ move between fields; other keys edit the focused one)."""
    if key in ("up", "down"):
        step = -1 if key == "up" else 1
        return attrs.evolve(form, focus=min(max(form.focus + step, 0), len(FORM_FIELDS) - 1))
    name = FORM_FIELDS[form.focus][0]
    text = edited(getattr(form, name), key)
    if name == "name":
        return attrs.evolve(form, name=text)
    if name == "description":
        return attrs.evolve(form, description=text)
    if name == "subtopics":
        return attrs.evolve(form, subtopics=text)
    return attrs.evolve(form, questions=text)


def _count(text: str) -> int | None:
    """A whole number of at least 1, else None."""
    text = text.strip()
    return int(text) if text.isdigit() and int(text) >= 1 else None


def form_problem(form: TopicForm, topics: tuple[TopicAnswer, ...]) -> str:
    """What keeps the form from being kept ("" when nothing); one line."""
    name = form.name.strip()
    if not name:
        return "a topic needs a name"
    if any(t.name == name for i, t in enumerate(topics) if i != form.editing):
        return f"a topic named {name} exists already"
    if _count(form.subtopics) is None:
        return "subtopics: a whole number, at least 1"
    if _count(form.questions) is None:
        return "questions per subtopic: a whole number, at least 1"
    return ""


def kept(form: TopicForm, topics: tuple[TopicAnswer, ...]) -> tuple[tuple[TopicAnswer, ...], int]:
    """The topics with the form's topic added or replaced, and its index (form checked first)."""
    topic = TopicAnswer(
        form.name.strip(),
        _count(form.subtopics) or 1,
        _count(form.questions) or 1,
        form.description.strip(),
    )
    if form.editing is None:
        return (*topics, topic), len(topics)
    replaced = tuple(topic if i == form.editing else t for i, t in enumerate(topics))
    return replaced, form.editing


def topic_lines(topics: tuple[TopicAnswer, ...], selected: int) -> list[str]:
    """The topic list, the selected one marked; a description on the line below its topic."""
    if not topics:
        return ["  no topic yet"]
    out = []
    for index, topic in enumerate(topics):
        mark = "▶" if index == selected else " "
        out.append(
            f"{mark} {topic.name}: {topic.subtopics} subtopics × {topic.questions} questions"
        )
        if topic.description:
            out.append(f"    {topic.description}")
    return out


def form_lines(form: TopicForm) -> list[str]:
    """The form's fields, the focused one marked and showing the cursor."""
    title = "new topic" if form.editing is None else "edit topic"
    out = [f"{title}:"]
    for index, (name, label) in enumerate(FORM_FIELDS):
        focused = index == form.focus
        cursor = "▏" if focused else ""
        out.append(f"{'▶' if focused else ' '} {label}: {getattr(form, name)}{cursor}")
    return out
