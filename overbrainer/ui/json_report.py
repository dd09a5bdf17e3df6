"""The one JSON document a command run with `--json` prints on stdout when it ends."""

from __future__ import annotations

import datetime
import enum
import functools
import json
import re
from collections.abc import Mapping
from decimal import Decimal
from pathlib import PurePath
from typing import cast

import attrs

from overbrainer.model.json_values import JsonValue, money, utc_time
from overbrainer.model.redact import redact

JSON_DOCUMENT_VERSION = 1
"""`"version"` of every `--json` document: it changes only when a key is removed or its type
changes; new keys keep it."""

MONEY_FIELD = re.compile(r"^(cost|price)$|_usd$|^cost_|_cost$")
"""Names of the attrs fields holding USD as floats, written as exact decimal strings."""


@functools.singledispatch
def json_value(value: object) -> JsonValue:
    """`value` as JSON data: attrs records as objects (money fields as decimal strings), enums
    as their values, paths as strings, aware datetimes as RFC 3339 UTC, Decimals as strings.

    A type that needs other words registers its own converter (`@json_value.register`).
    """
    if attrs.has(type(value)):
        return _record(cast("attrs.AttrsInstance", value))
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if isinstance(value, enum.Enum):
        return json_value(value.value)
    if isinstance(value, Decimal):
        return money(value)
    if isinstance(value, datetime.datetime):
        return utc_time(value)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, Mapping):
        return {str(key): json_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple | frozenset | set):
        items = sorted(value) if isinstance(value, frozenset | set) else value
        return [json_value(item) for item in items]
    raise TypeError(f"no JSON form for {type(value).__name__}")


def _record(value: attrs.AttrsInstance) -> dict[str, JsonValue]:
    fields: dict[str, JsonValue] = {}
    for field in attrs.fields(type(value)):
        item = getattr(value, field.name)
        # A flag named like money (`cost_estimated`) stays a flag: bool is an int to Python.
        money_like = isinstance(item, float | int | Decimal) and not isinstance(item, bool)
        if MONEY_FIELD.search(field.name) and money_like:
            fields[field.name] = money(item)
        else:
            fields[field.name] = json_value(item)
    return fields


class JsonReport:
    """What a `--json` command found or did, printed as one document once it ends.

    The command's flow hands its results to the front end's `result(key, value)`; they land
    here under `key`, and `document` adds the command's name, exit code and error line.
    """

    def __init__(self, command: str) -> None:
        self.command = command
        self._fields: dict[str, JsonValue] = {}

    def put(self, key: str, value: object) -> None:
        """Set `key` of the document to `value` (converted now: the document is plain data)."""
        self._fields[key] = json_value(value)

    def get(self, key: str) -> JsonValue:
        """What `key` holds so far (None when unset)."""
        return self._fields.get(key)

    def document(self, exit_code: int, error: str | None) -> dict[str, JsonValue]:
        """The whole document: `command`, `version`, `exit_code`, `error`, then the results."""
        return {
            "command": self.command,
            "version": JSON_DOCUMENT_VERSION,
            "exit_code": exit_code,
            "error": error,
            **self._fields,
        }

    def render(self, exit_code: int, error: str | None) -> str:
        """The document as indented JSON, known secrets masked."""
        return redact(json.dumps(self.document(exit_code, error), ensure_ascii=False, indent=2))
