"""Parsing an OpenMetrics exposition back into samples, for exact comparisons in tests."""

from __future__ import annotations

from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from overbrainer.metrics.families import FAMILIES

Series = dict[tuple[tuple[str, str], ...], float]
Scrape = dict[str, Series]


def families(text: str) -> list[Metric]:
    """The families of an OpenMetrics text, parsed by prometheus_client (raises on bad text)."""
    return list(text_string_to_metric_families(text))  # type: ignore[no-untyped-call]


def samples(text: str) -> Scrape:
    """Every sample of the text: sample name → labels (in the family's declared order) → value."""
    declared = {spec.name: spec.labels for spec in FAMILIES}
    found: Scrape = {}
    for family in families(text):
        order = declared.get(family.name, ())
        for sample in family.samples:
            # The exposition sorts labels; tests write them in the order the family declares.
            labels = sorted(sample.labels.items(), key=lambda item: _rank(order, item[0]))
            found.setdefault(sample.name, {})[tuple(labels)] = sample.value
    return found


def _rank(order: tuple[str, ...], name: str) -> tuple[int, str]:
    return (order.index(name), "") if name in order else (len(order), name)
