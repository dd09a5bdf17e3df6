"""The bench's report maths and lm-eval results parsing, on literal documents."""

from __future__ import annotations

import json
import math

import pytest

from overbrainer.compare.bench_report import (
    IMPROVED,
    NO_BASE,
    NO_ERROR,
    REGRESSED,
    WITHIN,
    BenchReport,
    bench_markdown,
    build_rows,
    regressions,
    verdict,
)
from overbrainer.compare.bench_results import BadResults, Score, parse_scores

# The shape lm-eval 0.4.13 writes (trimmed): a metric, its `_stderr`, `N/A` for one sample.
RESULTS = {
    "results": {
        "tiny_qa": {
            "name": "tiny_qa",
            "alias": "tiny_qa",
            "sample_len": 5,
            "exact_match,none": 0.4,
            "exact_match_stderr,none": 0.2449489742783178,
        },
        "gsm8k": {
            "alias": "gsm8k",
            "exact_match,strict-match": 0.25,
            "exact_match_stderr,strict-match": 0.05,
            "exact_match,flexible-extract": 0.3,
            "exact_match_stderr,flexible-extract": "N/A",
        },
        "wikitext": {"alias": "wikitext", "word_perplexity,none": 12.5},
    },
    "higher_is_better": {
        "tiny_qa": {"exact_match": True},
        "gsm8k": {"exact_match": True},
        "wikitext": {"word_perplexity": False},
    },
}


def test_every_metric_is_read_with_its_standard_error_and_direction() -> None:
    scores = parse_scores(json.dumps(RESULTS), "results.json")
    assert scores == [
        Score("tiny_qa", "exact_match", "none", 0.4, 0.2449489742783178, True),
        Score("gsm8k", "exact_match", "strict-match", 0.25, 0.05, True),
        Score("gsm8k", "exact_match", "flexible-extract", 0.3, None, True),
        Score("wikitext", "word_perplexity", "none", 12.5, None, False),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "r.json is not JSON (line 1)"),
        ('{"x": 1}', "r.json has no `results` object: not an lm-eval results file"),
        ('{"results": {"t": 3}}', "r.json: `results.t` is not an object"),
    ],
)
def test_a_file_that_is_not_lm_evals_results_is_named(text: str, message: str) -> None:
    with pytest.raises(BadResults) as caught:
        parse_scores(text, "r.json")
    assert str(caught.value) == message


def _score(value: float, stderr: float | None, higher: bool = True) -> Score:
    return Score("t", "acc", "none", value, stderr, higher)


def test_a_regression_is_a_drop_beyond_1_96_standard_errors_of_the_difference() -> None:
    # se of the difference: sqrt(0.03² + 0.04²) = 0.05; the bound 1.96 × 0.05 = 0.098.
    difference, bound, word = verdict(_score(0.50, 0.03), _score(0.60, 0.04))
    assert difference == pytest.approx(-0.10)
    assert bound == pytest.approx(0.098)
    assert word == REGRESSED
    assert verdict(_score(0.51, 0.03), _score(0.60, 0.04))[2] == WITHIN  # -0.09 is within
    assert verdict(_score(0.70, 0.03), _score(0.60, 0.04))[2] == IMPROVED
    assert verdict(_score(0.5, None), _score(0.6, 0.04))[2] == NO_ERROR
    assert verdict(_score(0.5, 0.03), None) == (None, None, NO_BASE)


def test_lower_is_better_metrics_regress_upwards() -> None:
    assert verdict(_score(14.0, 0.5, False), _score(12.0, 0.5, False))[2] == REGRESSED
    assert verdict(_score(10.0, 0.5, False), _score(12.0, 0.5, False))[2] == IMPROVED


def test_rows_match_the_base_by_task_metric_and_filter_and_name_the_regressed_tasks() -> None:
    child = [
        Score("a", "acc", "none", 0.2, 0.01),
        Score("b", "acc", "none", 0.5, 0.01),
        Score("c", "acc", "none", 0.5, 0.01),
    ]
    base = [Score("a", "acc", "none", 0.6, 0.01), Score("b", "acc", "none", 0.5, 0.01)]
    rows = build_rows(child, base)
    assert [row.verdict for row in rows] == [REGRESSED, WITHIN, NO_BASE]
    assert regressions(rows) == ("a",)
    report = BenchReport("r", "bench_1", ("child", "base"), ("a", "b", "c"), 1.96, rows, ("a",))
    markdown = bench_markdown(report)
    assert "**Regressed beyond the error:** `a`" in markdown
    assert "| a | acc ↑ | 0.2000 ± 0.0100 | 0.6000 ± 0.0100 | -0.4000 | 0.0277 | regressed |" in (
        markdown
    )
    assert "| c | acc ↑ | 0.5000 ± 0.0100 | – | – | – | no base |" in markdown
    assert math.isclose(rows[0].bound or 0, 1.96 * math.sqrt(2) * 0.01)


def test_the_report_says_when_nothing_regressed_or_no_base_was_benched() -> None:
    rows = build_rows([Score("a", "acc", "none", 0.5, 0.1)], [Score("a", "acc", "none", 0.6, 0.1)])
    both = BenchReport("r", "b", ("child", "base"), ("a",), 1.96, rows, regressions(rows))
    assert "No regression beyond the error: on no task is the child below its base" in (
        bench_markdown(both)
    )
    alone = BenchReport("r", "b", ("child",), ("a",), 1.96, build_rows([], None), ())
    assert "No base model was benched" in bench_markdown(alone)
    assert json.loads(both.to_json())["rows"][0]["verdict"] == WITHIN
