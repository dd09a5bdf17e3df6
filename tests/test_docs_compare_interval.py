"""The docs' win-or-tie rates and Wilson intervals, recomputed from the counts they show.

Each figure is checked twice: against `wilson`, the code the report uses, and against the closed
form worked here in 40-digit decimals with z from `statistics.NormalDist`, so a docs figure can
follow neither a drifted text nor a drifted z.
"""

from __future__ import annotations

import re
from decimal import Decimal, localcontext
from pathlib import Path
from statistics import NormalDist

import pytest

from overbrainer.compare.stats import wilson

DOCS = Path(__file__).resolve().parent.parent / "docs"
Z = NormalDist().inv_cdf(0.975)


def exact_wilson(successes: int, trials: int) -> tuple[float, float]:
    """The Wilson score interval without continuity correction, in 40-digit decimals."""
    with localcontext() as context:
        context.prec = 40
        n, z2 = Decimal(trials), Decimal(Z) ** 2
        p = Decimal(successes) / n
        denominator = 1 + z2 / n
        centre = (p + z2 / (2 * n)) / denominator
        half = Decimal(Z) * (p * (1 - p) / n + z2 / (4 * n * n)).sqrt() / denominator
        return float(max(Decimal(0), centre - half)), float(min(Decimal(1), centre + half))


def shown(value: float, digits: int = 1) -> str:
    """A proportion as the docs show it: a percentage to `digits` decimals."""
    return f"{value * 100:.{digits}f}"


def assert_interval(successes: int, trials: int, low: str, high: str, digits: int = 1) -> None:
    """`low`–`high` (percent, as printed) is the interval of `successes` in `trials`, both ways."""
    for interval in (wilson(successes, trials), exact_wilson(successes, trials)):
        assert interval is not None
        assert (shown(interval[0], digits), shown(interval[1], digits)) == (low, high)


def section(text: str, heading: str) -> str:
    """The text of one `## heading` section."""
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : None if end < 0 else end]


def compare_md() -> str:
    """docs/compare.md."""
    return (DOCS / "compare.md").read_text(encoding="utf-8")


def test_the_code_and_the_closed_form_agree() -> None:
    for trials in (1, 4, 7, 188, 1000):
        for successes in range(0, trials + 1, max(1, trials // 9)):
            ours, exact = wilson(successes, trials), exact_wilson(successes, trials)
            assert ours is not None
            assert ours == pytest.approx(exact, abs=1e-12)
    # Not 1.96: the quantile itself, which the docs give to six decimals.
    assert f"z = {Z:.6f}" in section(compare_md(), "How to read a small sample")


def test_the_small_sample_examples_are_their_counts_intervals() -> None:
    text = " ".join(section(compare_md(), "How to read a small sample").split())
    examples = re.findall(
        r"won or tied (\d+) of (\d+) judged questions, ([\d.]+) %, "
        r"interval ([\d.]+) % to ([\d.]+) %",
        text,
    )
    assert len(examples) == 2
    for good, judged, rate, low, high in examples:
        assert shown(int(good) / int(judged)) == rate
        assert_interval(int(good), int(judged), low, high)
    wins, ties, losses, unparsed, questions = map(
        int,
        re.findall(
            r"(\d+) wins, (\d+) ties, (\d+) losses, (\d+) unparsed of (\d+) questions", text
        )[0],
    )
    assert (str(wins + ties), str(wins + ties + losses)) == examples[1][:2]
    assert wins + ties + losses + unparsed == questions


def test_the_real_reports_rows_are_its_counts_interval() -> None:
    report = section(compare_md(), "A real report")
    rows = dict(re.findall(r"^    \| ([^|]+?) \| ([^|]+?) \|$", report, re.MULTILINE))
    wins, ties, losses = map(int, rows["Wins / ties / losses"].split(" / "))  # errors in losses
    unparsed = int(rows["Unparsed verdicts (not counted)"])
    inconsistent = int(rows.get("Position-inconsistent verdicts (not counted)", "0"))
    assert wins + ties + losses + unparsed + inconsistent == int(rows["Questions"])
    good, judged = wins + ties, wins + ties + losses
    assert rows["Win or tie"] == f"{shown(good / judged)}%"
    interval = re.fullmatch(r"([\d.]+)% to ([\d.]+)%", rows["Win or tie, 95% interval (Wilson)"])
    assert interval is not None
    assert_interval(good, judged, interval[1], interval[2])


def test_the_published_figures_rate_is_its_counts() -> None:
    text = " ".join(compare_md().split())
    questions, rate, wins, ties, losses, unparsed = re.findall(
        r"\((\d+) questions, a 9B judge\) read, for its Qwen3-4B child: "
        r"win or tie ([\d.]+) % \((\d+) / (\d+) / (\d+), (\d+) unparsed\)",
        text,
    )[0]
    good = int(wins) + int(ties)
    assert shown(good / (good + int(losses))) == rate
    assert good + int(losses) + int(unparsed) == int(questions)


def test_the_tui_compare_lines_are_their_counts_intervals() -> None:
    lines = re.findall(
        r"win or tie ([\d.]+)% \(95%: (\d+)-(\d+)%\): (\d+) wins, (\d+) ties, (\d+) losses, "
        r"(\d+) errors",
        (DOCS / "tui.md").read_text(encoding="utf-8"),
    )
    assert lines
    for rate, low, high, wins, ties, losses, errors in lines:
        good = int(wins) + int(ties)
        judged = good + int(losses) + int(errors)
        assert shown(good / judged) == rate
        assert_interval(good, judged, low, high, digits=0)
