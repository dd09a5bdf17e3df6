"""A whole JSON document (`run.json`, `pod.json`): decoded, or where it stops being JSON."""

from __future__ import annotations

import json


class NotJson(ValueError):
    """The text is not one JSON document; `where` says where, never what it holds."""

    def __init__(self, where: str) -> None:
        super().__init__(where)
        self.where = where


def load_document(text: str | bytes) -> object:
    """The decoded value; `NotJson` with `line L, column C` (or `not UTF-8`) otherwise."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise NotJson(f"line {error.lineno}, column {error.colno}") from None
    except UnicodeDecodeError:
        raise NotJson("not UTF-8") from None
