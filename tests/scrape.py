"""Parsing an OpenMetrics exposition back into samples, for exact comparisons in tests."""

from __future__ import annotations

from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics.parser import text_string_to_metric_families

Series = dict[tuple[tuple[str, str], ...], float]
Scrape = dict[str, Series]


def families(text: str) -> list[Metric]:
    """The families of an OpenMetrics text, parsed by prometheus_client (raises on bad text)."""
    return list(text_string_to_metric_families(text))  # type: ignore[no-untyped-call]


def samples(text: str) -> Scrape:
    """Every sample of the text: sample name → labels (in order) → value."""
    found: Scrape = {}
    for family in families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sample.labels.items())] = sample.value
    return found
