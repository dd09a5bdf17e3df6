"""Where a TOML syntax error is and, for a table or key given twice, which one and where first."""

from __future__ import annotations

import ast
import re
import tomllib

_AT = re.compile(r"\(at line (\d+), column (\d+)\)")
_TWICE = re.compile(r"Cannot declare (\(.*\)) twice")
_KEY = re.compile(r"\s*([^=#]+?)\s*=")
_HEADER = re.compile(r"\s*(\[\[?)\s*(.+?)\s*\]\]?\s*(?:#.*)?$")


def syntax_error_at(text: str, error: tomllib.TOMLDecodeError) -> str:
    """` at line N, column M` for a TOML error, the end of the text when it is at the end.

    A table or key defined twice adds what it is and, for a table, the line of its first
    header: tomllib only says `Cannot declare ('pipeline',) twice`, which names no line of it.
    """
    found = _AT.search(str(error))
    if found is None:
        if "end of document" in str(error):
            lines = text.split("\n")
            return f" at line {len(lines)}, column {len(lines[-1]) + 1}"
        return ""
    line = int(found[1])
    return f" at line {line}, column {found[2]}{_twice(text, str(error), line)}"


def _twice(text: str, message: str, line: int) -> str:
    """`: table [a.b] is defined twice (first at line N)`, or `` for any other error."""
    lines = text.split("\n")
    declared = _TWICE.search(message)
    if declared is not None:
        parts = _key_parts(declared[1])
        if parts is None:
            return ""
        name = ".".join(parts)
        first = _first_header(lines[: line - 1], parts)
        at = "" if first is None else f" (first at line {first})"
        return f": table [{name}] is defined twice{at}"
    if message.startswith("Cannot overwrite a value") and 0 < line <= len(lines):
        key = _KEY.match(lines[line - 1])
        if key is not None:
            return f": key `{key[1]}` is defined twice"
    return ""


def _key_parts(literal: str) -> tuple[str, ...] | None:
    """The key tuple tomllib prints, `('a', 'b')`, as its parts."""
    try:
        parts = ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return None
    if isinstance(parts, tuple) and all(isinstance(p, str) for p in parts):
        return parts
    return None


def _first_header(lines: list[str], parts: tuple[str, ...]) -> int | None:
    """The 1-based line of the first `[a.b]` or `[[a.b]]` header naming `parts`, if any."""
    for number, line in enumerate(lines, start=1):
        header = _HEADER.match(line)
        if header is None:
            continue
        try:
            parsed = tomllib.loads(f"{header[1]}{header[2]}{header[1].replace('[', ']')}")
        except tomllib.TOMLDecodeError:
            continue
        if _path_of(parsed) == parts:
            return number
    return None


def _path_of(table: dict[str, object]) -> tuple[str, ...]:
    """The one path of nested single-key tables that parsing a lone header produces."""
    path: list[str] = []
    node: object = table
    while isinstance(node, dict) and len(node) == 1:
        key, node = next(iter(node.items()))
        path.append(key)
        if isinstance(node, list):
            node = node[-1] if node else {}
    return tuple(path)
