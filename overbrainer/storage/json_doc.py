"""A whole JSON document (`run.json`, `pod.json`): decoded, or where it stops being JSON."""

from __future__ import annotations

import json
from typing import TypeVar

from overbrainer.model import codec

T = TypeVar("T")


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


def decode_document(cls: type[T], data: str | bytes, where: str, what: str) -> T:
    """The record `cls` stored as the whole document `data`; `ValueError` naming `where` when
    it is not JSON, or not `what` (e.g. `a compare setup`)."""
    try:
        raw = load_document(data)
    except NotJson as error:
        raise ValueError(f"{where} is not JSON ({error.where})") from None
    try:
        return codec.decode(cls, raw)
    except ValueError as error:
        raise ValueError(f"{where} is not {what}: {error}") from None
