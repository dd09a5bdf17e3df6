"""Move the deprecated `training.hub_model_id` to `[hub] repo` by editing the TOML text in place.

Only the lines concerned change: the key's line goes, and `[hub]` gets the keys it lacks (a new
table at the end when there is none), so the user's comments and layout stay. The edit is
checked by parsing both texts: apart from the move, the settings must be the same.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib

import attrs

from overbrainer.config.errors import ConfigError

_HEADER = re.compile(r"^\s*\[(?!\[)\s*([^\[\]#]+?)\s*\]\s*(#.*)?$")
_KEY = re.compile(r"^\s*(?:hub_model_id|\"hub_model_id\"|'hub_model_id')\s*=")


@attrs.frozen
class HubMove:
    """The deprecated key's value, the `[hub] repo` already set if any, and the edited text."""

    value: str
    kept_repo: str | None
    text: str


def _table(header: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in header.split("."))


def _sections(lines: list[str]) -> list[tuple[str, int]]:
    """(table name, index of the first line after its header), root table first."""
    found = [("", 0)]
    for index, line in enumerate(lines):
        if match := _HEADER.match(line):
            found.append((_table(match.group(1)), index + 1))
    return found


def _section_end(lines: list[str], sections: list[tuple[str, int]], start: int) -> int:
    later = [begin - 1 for _, begin in sections if begin > start]
    return min(later) if later else len(lines)


def _expected(before: dict[str, object], value: str) -> dict[str, object]:
    expected = copy.deepcopy(before)
    training = expected["training"]
    assert isinstance(training, dict)
    del training["hub_model_id"]
    hub = expected.setdefault("hub", {})
    assert isinstance(hub, dict)
    if "repo" not in hub:
        hub["repo"] = value
        hub.setdefault("private", True)
        hub.setdefault("after_training", True)
    return expected


def plan_hub_move(text: str) -> HubMove | None:
    """The move for this `overbrainer.toml` text; None when the key is absent or the file is
    not valid TOML (`config check` reports that). Raises ConfigError when the text cannot be
    edited line by line (the key in an inline table or a dotted key, say)."""
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    training = before.get("training")
    if not isinstance(training, dict) or "hub_model_id" not in training:
        return None
    value = training["hub_model_id"]
    hub = before.get("hub")
    kept = hub.get("repo") if isinstance(hub, dict) else None
    if not isinstance(value, str) or not (kept is None or isinstance(kept, str)):
        return None  # a wrong type is for `config check` to report
    edited = _edit(text, value, kept is None, hub if isinstance(hub, dict) else {})
    try:
        after = tomllib.loads(edited) if edited is not None else None
    except tomllib.TOMLDecodeError:
        after = None
    if after is None or after != _expected(before, value):
        raise ConfigError(
            "cannot move training.hub_model_id in overbrainer.toml line by line: "
            'delete it and set [hub] repo = "NAMESPACE/NAME" by hand'
        )
    return HubMove(value, kept, edited or text)


def _edit(text: str, value: str, set_repo: bool, hub: dict[str, object]) -> str | None:
    lines = text.splitlines(keepends=True)
    sections = _sections(lines)
    starts = [start for name, start in sections if name == "training"]
    if len(starts) != 1:
        return None
    start = starts[0]
    end = _section_end(lines, sections, start)
    keys = [i for i in range(start, end) if _KEY.match(lines[i])]
    if len(keys) != 1:
        return None
    del lines[keys[0]]
    if not set_repo:
        return "".join(lines)
    sections = _sections(lines)
    added = [f"repo = {json.dumps(value, ensure_ascii=False)}\n"]
    added += [f"{key} = true\n" for key in ("private", "after_training") if key not in hub]
    hub_starts = [start for name, start in sections if name == "hub"]
    if hub_starts:
        index = hub_starts[0]
        lines[index:index] = added
    else:
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        lines += ["\n", "[hub]\n", *added]
    return "".join(lines)
