"""Reading `[quality] decontaminate` files, and writing the audit of what they left out.

A benchmark file is JSONL: one JSON object a line, blank lines skipped. Its question is the
first of: a string `question`; a string `prompt`; the string `content` of the first entry of a
`messages` list whose `role` is `user` (chat dumps), or of its first entry when none has a role.
Anything else stops the split with one line naming the file and the line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from overbrainer.model.errors import UsageError
from overbrainer.pipeline.decontaminate import BenchmarkIndex, Contamination, Source
from overbrainer.storage import write_atomic

AUDIT_FILE = "decontaminated"
"""`data/decontaminated.jsonl`: one line per answer the benchmarks left out."""


def _message_text(messages: object) -> str | None:
    if not isinstance(messages, list) or not messages:
        return None
    dicts = [m for m in messages if isinstance(m, dict)]
    users = [m for m in dicts if m.get("role") == "user"]
    first = users[0] if users else messages[0]
    content = first.get("content") if isinstance(first, dict) else None
    return content if isinstance(content, str) else None


def question_of(line: str) -> str | None:
    """The question of one benchmark line, or None when the line holds none."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    for key in ("question", "prompt"):
        if isinstance(value.get(key), str):
            return str(value[key])
    return _message_text(value.get("messages"))


def read_benchmark(path: Path, shown: str) -> Iterator[tuple[str, Source]]:
    """Each question of one file with where it is; UsageError naming `shown` and the line."""
    try:
        # utf-8-sig: a dump saved with a byte-order mark still reads from its first line.
        content = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        cause = "no such file" if isinstance(error, FileNotFoundError) else str(error)
        raise UsageError(f"cannot read {shown} (quality.decontaminate): {cause}") from None
    for number, line in enumerate(content.split("\n"), start=1):
        if not line.strip():
            continue
        question = question_of(line)
        if question is None:
            raise UsageError(
                f"{shown} line {number} (quality.decontaminate): expected a JSON object with"
                " a `question` or `prompt` string or a `messages` list"
            )
        yield question, Source(shown, number)


def load_benchmarks(root: Path, files: Sequence[str], n: int, threshold: float) -> BenchmarkIndex:
    """Every question of `files` (relative to the project `root`) in one index; blocking."""
    index = BenchmarkIndex(n, threshold)
    for name in files:
        index.add_all(read_benchmark(root / name, name))
    return index


def audit_line(answer_id: str, topic: str, subtopic: str, found: Contamination) -> str:
    """One line of the audit file: which answer, and the benchmark question it overlaps."""
    return json.dumps(
        {
            "id": answer_id,
            "topic": topic,
            "subtopic": subtopic,
            "benchmark": found.source.file,
            "line": found.source.line,
            "overlap": round(found.overlap, 4),
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def write_audit(path: Path, lines: Sequence[str]) -> None:
    """Rewrite the audit file atomically with `lines`; blocking."""
    write_atomic(path, "".join(f"{line}\n" for line in lines))
