"""Hub repo names: `--repo` > `[hub] repo` > `<whoami>/<project name>`, validated (spec §C.1)."""

from __future__ import annotations

import re

import attrs

from overbrainer.hub.errors import PushRefused

# The Hub's own rule for a namespace or repo name (huggingface_hub's `validate_repo_id`).
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?")


@attrs.frozen
class RepoId:
    """`namespace/name` on the Hub."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def _valid(part: str) -> bool:
    return bool(_NAME.fullmatch(part)) and "--" not in part and ".." not in part


def parse_repo(text: str) -> RepoId:
    """`NAMESPACE/NAME` with both parts valid Hub names, else PushRefused naming the text."""
    namespace, sep, name = text.partition("/")
    if not sep or "/" in name or not _valid(namespace) or not _valid(name):
        raise PushRefused(f"`{text}` is not a Hugging Face repo: use NAMESPACE/NAME")
    return RepoId(namespace, name)


def default_name(project_name: str) -> str:
    """The repo name from the project name: `_` becomes `-`."""
    return project_name.replace("_", "-")
