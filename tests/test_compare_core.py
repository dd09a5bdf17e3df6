"""The pure core of `compare`, pinned to the spec's literals (§A.4, §A.8-§A.12)."""

from __future__ import annotations

import json

import pytest
import xxhash

from overbrainer.compare.answers import ChildAnswer, LoadFigures
from overbrainer.compare.hardware import Hardware
from overbrainer.compare.questions import eval_questions
from overbrainer.compare.reasoning import strip_reasoning
from overbrainer.compare.report import JudgeUsage, Report, report_json, report_markdown
from overbrainer.compare.setup import CompareSetup
from overbrainer.compare.stats import Prices, costs, percentile, summarize, wilson
from overbrainer.compare.verdicts import (
    JudgeReply,
    Verdict,
    VerdictLine,
    agreed,
    child_first,
    parse_reply,
    verdict_of,
    verdicts_key,
)
from overbrainer.storage.records import Example


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A <think>x</think>B<think>y</think> C", "A B C"),
        ("Answer.<think>never closed", "Answer."),
        ("thinking first</think>\nAnswer.", "Answer."),
        ("<think>a</think>\n\nAnswer", "Answer"),
        ("no reasoning at all", "no reasoning at all"),
        ("a </think> b <think>c</think> d", "b d"),
        ("x <think>c</think>\n  indented", "x \n  indented".strip()),
        ("", ""),
    ],
)
def test_strip_reasoning(text: str, expected: str) -> None:
    assert strip_reasoning(text) == expected


def test_strip_reasoning_keeps_indentation_after_a_block() -> None:
    assert strip_reasoning("a<think>x</think>\n    code") == "a\n    code"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"verdict": "A", "reason": "more correct"}', JudgeReply("A", "more correct")),
        ('{"verdict": " b ", "reason": "  ok  "}', JudgeReply("B", "ok")),
        ('{"verdict": "TIE"}', JudgeReply("tie", "")),
        ('Sure! {not json} then {"verdict": "B", "reason": "x"} done', JudgeReply("B", "x")),
        ('{"verdict": "C"} {"verdict": "A", "reason": 3}', JudgeReply("A", "")),
        (
            '```json\n{"verdict": "tie", "reason": "both {fine}"}\n```',
            JudgeReply("tie", "both {fine}"),
        ),
        ('{"outer": {"verdict": "A"}}', JudgeReply("A", "")),
        ("I cannot decide.", None),
        ('{"verdict": "A"', None),
        ('["verdict", "A"]', None),
        ('{"verdict": 1}', None),
    ],
)
def test_parse_reply(reply: str, expected: JudgeReply | None) -> None:
    assert parse_reply(reply) == expected


def test_verdict_mapping() -> None:
    assert verdict_of("tie", True) is Verdict.TIE
    assert verdict_of("A", True) is Verdict.WIN
    assert verdict_of("B", False) is Verdict.WIN
    assert verdict_of("B", True) is Verdict.LOSS
    assert verdict_of("A", False) is Verdict.LOSS


def test_both_orders_count_only_agreement() -> None:
    assert agreed(Verdict.WIN, Verdict.WIN) is Verdict.WIN
    assert agreed(Verdict.TIE, Verdict.TIE) is Verdict.TIE
    assert agreed(Verdict.WIN, Verdict.LOSS) is Verdict.INCONSISTENT
    assert agreed(Verdict.TIE, Verdict.WIN) is Verdict.INCONSISTENT
    assert agreed(Verdict.UNPARSED, Verdict.WIN) is Verdict.UNPARSED


def test_child_first_is_the_low_bit_of_xxh3_64_with_the_seed() -> None:
    # XXH3-64 of the empty input with seed 0 is the algorithm's published test vector.
    assert xxhash.xxh3_64_hexdigest(b"") == "2d06800538d394c2"
    assert [child_first(f"q{i}", 42) for i in range(4)] == [False, False, True, False]
    for question_id in ("q0", "q2", "abc"):
        for seed in (0, 7, 42):
            digest = xxhash.xxh3_64_intdigest(question_id.encode(), seed=seed)
            assert child_first(question_id, seed) == bool(digest & 1)


def test_verdicts_key_is_16_hex_of_provider_model_and_template() -> None:
    assert verdicts_key("p", "m", "t") == "5a323458127f0ba2"
    assert verdicts_key("p", "m", "t2") != verdicts_key("p", "m", "t")
    assert verdicts_key("p", "m2", "t") != verdicts_key("p", "m", "t")
    assert verdicts_key("p", "m", "t", both_orders=True) != verdicts_key("p", "m", "t")


def test_verdict_line_round_trip() -> None:
    line = VerdictLine("q1", Verdict.WIN, "better", True)
    assert line.to_json() == '{"id":"q1","verdict":"win","reason":"better","child_first":true}'
    assert VerdictLine.from_json(line.to_json()) == line


def test_nearest_rank_percentile() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    assert percentile(values, 50) == 5.0
    assert percentile(values, 95) == 10.0
    assert percentile([3.5], 50) == 3.5
    assert percentile([1.0, 2.0, 3.0], 50) == 2.0
    assert percentile([1.0, 2.0], 1) == 1.0
    assert percentile([], 50) is None


def test_wilson_interval_against_known_values() -> None:
    low, high = wilson(5, 10) or (0, 0)
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634)
    low, high = wilson(0, 10) or (0, 0)
    assert (round(low, 4), round(high, 4)) == (0.0, 0.2775)
    low, high = wilson(10, 10) or (0, 0)
    assert (round(low, 4), round(high, 4)) == (0.7225, 1.0)
    assert wilson(0, 0) is None


def test_cost_per_1000_requests_against_the_published_figures() -> None:
    # §F: parent $7.6164 per 1,000 requests at $1.1 / $2.2 per million; child $0.4579; 6.0 %.
    prices = Prices(parent_in=1.1, parent_out=2.2, child_per_hour=0.27)
    result = costs(prices, [(100, 3000), (300, 3724)], mean_seconds=6.1052)
    assert result.parent_per_1k == 7.6164
    assert result.child_per_1k == 0.45789
    assert f"{(result.ratio or 0) * 100:.1f}%" == "6.0%"
    assert f"{0.4579 / 7.6164 * 100:.1f}%" == "6.0%"
    load = LoadFigures(2, 10, 0, 5.0, 2.0, 40.0, 1.0, 1.2)
    loaded = costs(prices, [(100, 3000)], mean_seconds=6.1052, load=load)
    assert loaded.child_under_load_per_1k == round(0.27 / (2.0 * 3600) * 1000, 6)
    assert costs(Prices(None, 2.2, None), [(1, 1)], 1.0).parent_per_1k is None


def test_summary_counts_and_denominator() -> None:
    verdicts = [Verdict.WIN] * 3 + [Verdict.TIE, Verdict.LOSS, Verdict.UNPARSED, Verdict.ERROR]
    answers = [
        ChildAnswer("a", "x", "stop", 1, 10, 2.0, 0.5, 6.67),
        ChildAnswer("b", "x", "length", 1, 10, 1.0, 0.25, 13.3),
        ChildAnswer("c", "", "stop", 1, 0, 3.0, None, None),
        ChildAnswer("d", error="boom"),
    ]
    s = summarize(verdicts, answers)
    assert (s.questions, s.wins, s.ties, s.losses, s.unparsed, s.errors) == (7, 3, 1, 1, 1, 1)
    assert s.truncated == 1
    assert s.win_or_tie == 4 / 6
    assert (s.latency_p50, s.latency_p95, s.first_token_p50) == (2.0, 3.0, 0.25)
    assert s.mean_seconds == 2.0
    assert s.win_or_tie_low is not None and s.win_or_tie_low < 4 / 6 < (s.win_or_tie_high or 0)


def _example(n: int, content: str = "Why?") -> Example:
    return Example.from_json(
        json.dumps(
            {
                "id": f"q{n}",
                "topic": "t",
                "subtopic": "s",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": content},
                    {
                        "role": "assistant",
                        "content": "<think>hm</think>Because.",
                        "reasoning_content": "r",
                    },
                ],
                "meta": {
                    "model": "m",
                    "input_tokens": 10 + n,
                    "output_tokens": 20,
                    "finish_reason": "stop",
                    "reasoning_kind": "none",
                },
            }
        )
    )


def test_eval_questions_strip_the_parent_and_keep_file_order() -> None:
    questions = eval_questions([_example(0), _example(1), _example(2)], limit=2)
    assert [q.id for q in questions] == ["q0", "q1"]
    q = questions[1]
    assert q.parent == "Because."
    assert [m.to_dict() for m in q.messages] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Why?"},
    ]
    assert (q.parent_input_tokens, q.parent_output_tokens) == (11, 20)


def _report(**overrides: object) -> Report:
    setup = CompareSetup(
        run="run_1",
        compare="compare_20261007-111838",
        gguf="output/gguf/model-Q4_K_M.gguf",
        gguf_sha256="0123456789abcdef" * 4,
        quantize="Q4_K_M",
        llama_cpp="b11320",
        base_model="Qwen/Qwen3-4B",
        seed=42,
        created="2026-10-07T11:18:38Z",
        questions=tuple(
            eval_questions([_example(0, "What   is\n a borrow?"), _example(1), _example(2)])
        ),
    )
    verdicts = (
        VerdictLine("q0", Verdict.LOSS, "parent is right", True),
        VerdictLine("q1", Verdict.WIN, None, False),
        VerdictLine("q2", Verdict.ERROR, None, True),
    )
    answers = {
        "q0": ChildAnswer("q0", "Line one\n\nline two", "stop", 5, 8, 1.5, 0.1, 5.71),
        "q1": ChildAnswer("q1", "<think>x</think>Short.", "length", 5, 8, 0.5, 0.1, 20.0),
        "q2": ChildAnswer("q2", error="timed out"),
    }
    summary = summarize([v.verdict for v in verdicts], list(answers.values()))
    fields: dict[str, object] = {
        "setup": setup,
        "hardware": Hardware("ubuntu-cuda-13.4-x64", ("NVIDIA A40",), "AMD EPYC"),
        "judge": "local/qwen3.5:9b",
        "judge_is_parent": False,
        "verdicts_file": "verdicts-5a323458127f0ba2.jsonl",
        "summary": summary,
        "costs": costs(Prices(None, None, None), [], summary.mean_seconds),
        "child_price_from_pod": False,
        "verdicts": verdicts,
        "answers": answers,
    }
    fields.update(overrides)
    return Report(**fields)  # type: ignore[arg-type]


def test_compare_md_layout() -> None:
    md = report_markdown(_report())
    assert md == (
        "# Compare of run run_1\n\n| | |\n|---|---|\n"
        "| Compare | compare_20261007-111838 |\n"
        "| Base model | Qwen/Qwen3-4B |\n"
        "| GGUF | Q4_K_M, llama.cpp b11320, SHA-256 0123456789ab |\n"
        "| Hardware | 1 x NVIDIA A40 (ubuntu-cuda-13.4-x64) |\n"
        "| Judge | local/qwen3.5:9b |\n"
        "| Questions | 3 |\n"
        "| Date | 2026-10-07T11:18:38Z |\n\n"
        "## Summary\n\n| Measure | Value |\n|---|---|\n"
        "| Win or tie | 33.3% |\n"
        "| Wins / ties / losses | 1 / 0 / 2 |\n"
        "| Unparsed verdicts (not counted) | 0 |\n"
        "| Child errors (counted as losses) | 1 |\n"
        "| Child answers cut at the token limit | 1 |\n"
        "| Latency p50 / p95 | 0.50 s / 1.50 s |\n"
        "| Time to first token p50 | 0.10 s |\n"
        "| Output tokens per second | 12.9 |\n"
        "| Parent cost per 1,000 requests | not computed: set [compare] prices |\n"
        "| Child cost per 1,000 requests | not computed: set [compare] prices |\n"
        "| Child cost / parent cost | - |\n"
        "| Win or tie, 95% interval (Wilson) | 6.1% to 79.2% |\n"
        "| Judge tokens and cost (this command) | 0 in, 0 out; cost unknown |\n\n"
        "## Losses (first 2 of 2)\n\n"
        "### q2: Why?\n\nChild:\n\n> (no answer: timed out)\n\nParent:\n\n> Because.\n\n"
        "### q0: What is a borrow?\n\nChild:\n\n> Line one\n>\n> line two\n\n"
        "Parent:\n\n> Because.\n\nJudge: parent is right\n\n"
        "## Wins (first 1 of 1)\n\n"
        "### q1: Why?\n\nChild:\n\n> Short.\n\nParent:\n\n> Because.\n\n"
        "## Limits\n\n"
        "- 3 questions: a small sample, the rates move by several points from one set to another.\n"
        "- Requests were sent one at a time: the latency is that of one user, and the child cost"
        " is an upper bound (a server under load answers several requests at once).\n"
        "- 1 child answer hit the token limit; raise [compare] max_tokens or the context.\n"
    )


def test_compare_md_extra_rows_and_limits() -> None:
    load = LoadFigures(2, 3, 0, 1.5, 2.0, 30.0, 0.7, 0.9)
    summary = summarize([Verdict.WIN, Verdict.INCONSISTENT], [])
    md = report_markdown(
        _report(
            judge_is_parent=True,
            judge_both_orders=True,
            load=load,
            summary=summary,
            hardware=Hardware("ubuntu-x64", (), None),
            child_price_from_pod=True,
            costs=costs(Prices(1.0, 2.0, 0.5), [(1000, 1000)], 1.0, load),
            judge_usage=JudgeUsage(1200, 300, 0.0042, estimated=True, earlier_verdicts=2),
        )
    )
    assert "| Judge tokens and cost (this command) | 1200 in, 300 out; $0.0042 (estimated) |" in md
    assert "| Judge | local/qwen3.5:9b (the parent) |" in md
    assert "| Hardware | unknown CPU, CPU (ubuntu-x64) |" in md
    assert "| Position-inconsistent verdicts (not counted) | 1 |" in md
    assert "| Under load (2 parallel): requests per second | 2.00 |" in md
    assert "| Under load (2 parallel): latency p50 / p95 | 0.70 s / 0.90 s |" in md
    assert "| Under load (2 parallel): child cost per 1,000 requests | $0.0694 |" in md
    assert "| Parent cost per 1,000 requests | $3.0000 |" in md
    assert "| Child cost per 1,000 requests | $0.1389 (upper bound) |" in md
    limits = md.split("## Limits\n\n")[1].splitlines()
    assert limits[0].startswith("- The judge is the parent model")
    assert limits[3] == "- The child's hourly price is the Runpod pod's."
    assert limits[4] == "- The child ran on a CPU."
    assert limits[5] == (
        "- The judge cost counts this command's requests only: 2 verdict(s) came from an"
        " earlier judging (see `overbrainer history --all`)."
    )


def test_compare_json_fields() -> None:
    data = json.loads(report_json(_report()))
    assert list(data)[:15] == [
        "run", "compare", "base_model", "quantize", "gguf_sha256", "llama_cpp", "hardware",
        "judge", "judge_is_parent", "verdicts_file", "created", "seed", "summary", "costs",
        "child_price_from_pod",
    ]  # fmt: skip
    assert data["summary"]["win_or_tie"] == 1 / 3
    assert data["questions"][0]["question"] == "What   is\n a borrow?"
    assert data["questions"][1]["child"] == "Short."
    assert data["questions"][2]["child"] is None
    assert data["questions"][2]["error"] == "timed out"
    assert data["judge_usage"] == {
        "input_tokens": 0,
        "output_tokens": 0,
        "cost": None,
        "estimated": False,
        "earlier_verdicts": 0,
    }


def test_hardware_describe_groups_gpus() -> None:
    hardware = Hardware("ubuntu-cuda-13.4-x64", ("A", "B", "A"), None)
    assert hardware.describe() == "2 x A + 1 x B (ubuntu-cuda-13.4-x64)"
