"""Reading `[quality] decontaminate` files, and writing the audit of what they left out.

A benchmark file is JSONL: one JSON object a line, blank lines skipped. Its question is the
first of: a string `question`; a string `prompt`; the string `content` of the first entry of a
`messages` list whose `role` is `user` (chat dumps), or of its first entry when none has a role.
A file that is missing, a directory, binary (it holds a NUL byte) or not UTF-8 text, or a line
without a question, is bad input: one line naming `[quality] decontaminate`, the file and what
is wrong (`InvalidRecord`, exit 2). The stage commands and `run` check the files before any
stage starts (`check_benchmarks`), `config check` reports them (`benchmark_problems`), and the
split reads them again before it writes anything, so a bad file never leaves a history line.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from overbrainer.pipeline.decontaminate import BenchmarkIndex, Contamination, Source
from overbrainer.storage import InvalidRecord, write_atomic

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


KEY = "[quality] decontaminate"


def _text(path: Path, shown: str) -> str:
    """The text of one benchmark file; InvalidRecord saying what keeps it from being read."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        wrong = "not found"
    except IsADirectoryError:
        wrong = "is a directory"
    except OSError as error:
        wrong = f"cannot be read ({error.strerror or type(error).__name__})"
    else:
        if b"\0" in data:
            wrong = "is binary"
        else:
            # A dump saved with a byte-order mark still reads from its first line.
            skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
            try:
                return data[skip:].decode("utf-8")
            except UnicodeDecodeError as error:
                offset = skip + error.start
                wrong = f"is not UTF-8 text (byte 0x{data[offset]:02x} at offset {offset})"
    raise InvalidRecord(f"{KEY}: {shown} {wrong}")


def read_benchmark(path: Path, shown: str) -> Iterator[tuple[str, Source]]:
    """Each question of one file with where it is; InvalidRecord naming `shown` (and the
    line) when the file or a line is not usable."""
    content = _text(path, shown)
    for number, line in enumerate(content.split("\n"), start=1):
        if not line.strip():
            continue
        question = question_of(line)
        if question is None:
            raise InvalidRecord(
                f"{KEY}: {shown} line {number}: expected a JSON object with"
                " a `question` or `prompt` string or a `messages` list"
            )
        yield question, Source(shown, number)


def check_benchmarks(root: Path, files: Sequence[str]) -> None:
    """Read each of `files` (relative to the project `root`) whole: InvalidRecord on the
    first problem, before a stage starts. Blocking."""
    for name in files:
        for _ in read_benchmark(root / name, name):
            pass


def benchmark_problems(root: Path, files: Sequence[str]) -> list[str]:
    """The problem of each of `files` that cannot be used (`config check`). Blocking."""
    problems = []
    for name in files:
        try:
            check_benchmarks(root, [name])
        except InvalidRecord as error:
            problems.append(error.message)
    return problems


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
