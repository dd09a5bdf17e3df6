"""What a stage body gets: the project, settings, selected topics, templates, roles and bus."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import attrs

from overbrainer.config.settings import Role, Settings, Topic
from overbrainer.events.bus import EventBus
from overbrainer.events.interrupt import Interrupt
from overbrainer.events.types import Stage
from overbrainer.llm import LlmClient
from overbrainer.model.errors import OverbrainerError, UsageError
from overbrainer.model.usage import Price
from overbrainer.pipeline.spend import SpendCap
from overbrainer.project.directory import Project
from overbrainer.project.templates import Template, load_template

PIPELINE_TEMPLATES = ("subtopics.txt", "questions.txt", "answer_system.txt", "quality.txt")
"""The templates the stages render (split loads none)."""


class StageRole(Protocol):
    """A connected role as the stages use it (`overbrainer.llm.connect.RoleClient`)."""

    @property
    def name(self) -> str:
        """`generator`, `parent` or `embedder`."""

    @property
    def role(self) -> Role:
        """The role's configuration."""

    @property
    def provider(self) -> str:
        """The provider's name."""

    @property
    def client(self) -> LlmClient:
        """The client for the role's model."""

    @property
    def price(self) -> Price | None:
        """The model's price, when known."""


def select_topics(settings: Settings, names: Sequence[str]) -> tuple[Topic, ...]:
    """The configured topics named by `--topic` (all when none), in config order."""
    known = {topic.name for topic in settings.topics}
    for name in names:
        if name not in known:
            raise UsageError(f"unknown topic `{name}`")
    if not names:
        return settings.topics
    wanted = set(names)
    return tuple(topic for topic in settings.topics if topic.name in wanted)


def load_templates(project: Project) -> dict[str, Template]:
    """The pipeline's prompt templates: the project's overrides or the built-in defaults."""
    return {name: load_template(project.prompts, name) for name in PIPELINE_TEMPLATES}


def check_templates(templates: Mapping[str, Template], topics: Sequence[Topic]) -> None:
    """Render each stage template once per topic with sample values; raises TemplateError.

    A template that cannot render (an undefined variable) then stops the command before any
    stage writes or a force begins.
    """
    for topic in topics:
        for name, variables in sample_variables(topic).items():
            if name in templates:
                templates[name].render(**variables)


def sample_variables(topic: Topic) -> dict[str, dict[str, object]]:
    """Each stage template's variables for `topic`, with sample values where a stage has its
    own (one subtopic named as the topic, one question asked, none accepted yet)."""
    common: dict[str, object] = {"topic": topic.name, "description": topic.description}
    return {
        "subtopics.txt": {**common, "count": topic.subtopics},
        "questions.txt": {**common, "subtopic": topic.name, "count": 1, "accepted": []},
        "answer_system.txt": common,
        "quality.txt": {"question": "A question?", "answer": "An answer."},
    }


@attrs.define
class StageContext:
    """What a stage body gets: project, settings, selection, templates, roles and the bus."""

    project: Project
    settings: Settings
    topics: tuple[Topic, ...]
    bus: EventBus
    interrupt: Interrupt
    spend: SpendCap
    """The command's spend cap, shared by every stage of `run`; `SpendCap()` has no limit."""
    force: bool = False
    topic_filter: tuple[str, ...] | None = None
    templates: Mapping[str, Template] = attrs.field(factory=dict)
    roles: Mapping[str, StageRole] = attrs.field(factory=dict)

    @property
    def selected_topic_names(self) -> frozenset[str]:
        """The names of the selected topics."""
        return frozenset(topic.name for topic in self.topics)

    def template(self, name: str) -> Template:
        """A loaded prompt template, e.g. `template("answer_system.txt")`."""
        try:
            return self.templates[name]
        except KeyError:
            raise OverbrainerError(f"template {name} was not loaded") from None


_STAGE_ROLES = {
    Stage.SUBTOPICS: "generator",
    Stage.QUESTIONS: "generator",
    Stage.ANSWERS: "parent",
    Stage.QUALITY: "quality",
}


def stage_role_name(stage: Stage) -> str | None:
    """The role a stage asks: the generator, the parent, the quality judge, or none for split."""
    return _STAGE_ROLES.get(stage)
