"""Prompt templates: a project's `prompts/<file>` or the built-in default, rendered strictly."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import attrs
import jinja2

from overbrainer.model.errors import OverbrainerError
from overbrainer.model.text import decode_utf8

TEMPLATE_FILES = (
    "subtopics.txt",
    "questions.txt",
    "answer_system.txt",
    "judge.txt",
    "quality.txt",
)


class TemplateError(OverbrainerError):
    """A template cannot be read, parsed or rendered; the message names it."""

    exit_code = 2


_ENVIRONMENT = jinja2.Environment(
    undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=False
)


def default_text(name: str) -> str:
    """The built-in text of template `name`."""
    return (resources.files("overbrainer") / "prompts" / name).read_text(encoding="utf-8")


@attrs.frozen
class Template:
    """One parsed template and its name."""

    name: str
    compiled: jinja2.Template = attrs.field(eq=False, repr=False)

    def render(self, **variables: object) -> str:
        """The template's text with `variables`; an undefined one is an error."""
        try:
            return self.compiled.render(**variables)
        except jinja2.TemplateError as error:
            raise TemplateError(f"cannot render template {self.name}: {error.message}") from None


def template_source(prompts_dir: Path, name: str) -> str:
    """The text of `prompts_dir/name` when it exists, else the built-in default, unrendered."""
    path = prompts_dir / name
    if not path.exists():
        return default_text(name)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise TemplateError(f"cannot read {path}: {error.strerror}") from None
    return decode_utf8(raw, str(path))


def load_template(prompts_dir: Path, name: str) -> Template:
    """`prompts_dir/name` when it exists, else the built-in default, parsed."""
    return parse_template(name, template_source(prompts_dir, name))


def parse_template(name: str, text: str) -> Template:
    """`text` parsed as template `name`."""
    try:
        return Template(name, _ENVIRONMENT.from_string(text))
    except jinja2.TemplateSyntaxError as error:
        # The reference's «invalid template {name}», then where and why, to find the mistake.
        where = f"line {error.lineno}: {error.message}"
        raise TemplateError(f"invalid template {name}: {where}") from None
