"""The judge's verdicts: which order, the file key, reading a reply, the verdict lines (§A.8)."""

from __future__ import annotations

import enum
import json

import attrs
import xxhash

from overbrainer.model import codec


class Verdict(enum.Enum):
    """The child's result on one question."""

    WIN = "win"
    TIE = "tie"
    LOSS = "loss"
    UNPARSED = "unparsed"
    ERROR = "error"
    # Beyond the reference: the two orders disagreed ([compare] judge_both_orders).
    INCONSISTENT = "inconsistent"


def child_first(question_id: str, seed: int) -> bool:
    """Whether the child's answer is shown as A: XXH3-64 of the ID with the seed, low bit."""
    return (xxhash.xxh3_64_intdigest(question_id.encode("utf-8"), seed=seed) & 1) == 1


def verdicts_key(provider: str, model: str, template_source: str, both_orders: bool = False) -> str:
    """The 16 hex digits naming a judge and prompt's verdict file (XXH3-64, seed 0).

    Judging in both orders (ours) gives other verdicts, so it is part of the key when on; off,
    the key is the reference's.
    """
    joined = f"{provider}\x1f{model}\x1f{template_source}"
    if both_orders:
        joined += "\x1fboth_orders"
    return xxhash.xxh3_64_hexdigest(joined.encode())


def verdicts_file_name(key: str, base: bool = False) -> str:
    """`verdicts-<key>.jsonl`; the child against the base model: `verdicts-base-<key>.jsonl`."""
    return f"verdicts-base-{key}.jsonl" if base else f"verdicts-{key}.jsonl"


@attrs.frozen
class JudgeReply:
    """A parsed reply: `A`, `B` or `tie`, and the judge's reason ("" when none)."""

    choice: str
    reason: str


_DECODER = json.JSONDecoder()


def parse_reply(reply: str) -> JudgeReply | None:
    """The first JSON object, starting at any `{`, whose `verdict` is A, B or tie; else None."""
    start = reply.find("{")
    while start >= 0:
        try:
            value, _ = _DECODER.raw_decode(reply, start)
        except ValueError:
            value = None
        if isinstance(value, dict):
            verdict = value.get("verdict")
            if isinstance(verdict, str) and verdict.strip().lower() in ("a", "b", "tie"):
                reason = value.get("reason")
                choice = {"a": "A", "b": "B", "tie": "tie"}[verdict.strip().lower()]
                return JudgeReply(choice, reason.strip() if isinstance(reason, str) else "")
        start = reply.find("{", start + 1)
    return None


def verdict_of(choice: str, child_is_a: bool) -> Verdict:
    """The child's verdict from the judge's choice and the order the answers were shown in."""
    if choice == "tie":
        return Verdict.TIE
    return Verdict.WIN if (choice == "A") == child_is_a else Verdict.LOSS


def agreed(first: Verdict, second: Verdict) -> Verdict:
    """Both orders' verdict: the same one, else inconsistent (unparsed when either is)."""
    if Verdict.UNPARSED in (first, second):
        return Verdict.UNPARSED
    return first if first == second else Verdict.INCONSISTENT


@codec.record("verdict line", strict=False, optional=("reason",))
@attrs.frozen
class VerdictLine(codec.JsonRecord):
    """One line of `verdicts-<key>.jsonl`."""

    id: str
    verdict: Verdict
    reason: str | None
    child_first: bool
