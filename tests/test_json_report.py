"""The one `--json` mechanism: money, times, records as JSON, and the document's frame."""

from __future__ import annotations

import datetime
import enum
import json
from decimal import Decimal
from pathlib import Path

import attrs
import pytest

from overbrainer.events.types import Stage
from overbrainer.model.json_values import money, utc_time
from overbrainer.model.redact import register
from overbrainer.storage import HistoryRecord, HistoryStatus, SplitCounts
from overbrainer.ui.json_report import JsonReport, json_value


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        (None, None),
        (0.0, "0"),
        (-0.0, "0"),
        (12.0, "12"),
        (3, "3"),
        (1e-7, "0.0000001"),
        (0.1 + 0.2, "0.3"),
        (0.00007149999999999999, "0.0000715"),
        (2.5e-13, "0"),
        (Decimal("1.50"), "1.5"),
        (Decimal("0.000000000000001"), "0.000000000000001"),
    ],
)
def test_money_is_a_decimal_string_without_exponent_or_float_tail(
    amount: float | Decimal | None, text: str | None
) -> None:
    assert money(amount) == text


def test_times_are_rfc3339_utc() -> None:
    paris = datetime.timezone(datetime.timedelta(hours=1))
    assert utc_time(datetime.datetime(2026, 12, 7, 21, 0, tzinfo=paris)) == "2026-12-07T20:00:00Z"
    assert utc_time(0.5) == "1970-01-01T00:00:00.500000Z"
    with pytest.raises(ValueError, match="naive"):
        utc_time(datetime.datetime(2026, 12, 7))


class Colour(enum.Enum):
    RED = "red"


@attrs.frozen
class Priced:
    name: str
    cost: float | None
    budget_usd: float
    tokens: int
    colour: Colour
    where: Path
    tags: frozenset[str]


def test_records_become_objects_with_money_fields_as_strings() -> None:
    value = Priced("a", 0.25, 10.0, 7, Colour.RED, Path("/x/y"), frozenset({"b", "a"}))
    assert json_value(value) == {
        "name": "a",
        "cost": "0.25",
        "budget_usd": "10",
        "tokens": 7,
        "colour": "red",
        "where": "/x/y",
        "tags": ["a", "b"],
    }
    unknown = json_value(Priced("a", None, 0, 0, Colour.RED, Path("."), frozenset()))
    assert isinstance(unknown, dict)
    assert unknown["cost"] is None


def test_a_value_without_a_json_form_is_a_bug_not_silence() -> None:
    with pytest.raises(TypeError, match="object"):
        json_value(object())


def test_the_document_frames_the_results() -> None:
    report = JsonReport("history")
    record = HistoryRecord(
        Stage.SPLIT,
        "2026-12-07T20:00:00Z",
        "2026-12-07T20:00:01Z",
        HistoryStatus.OK,
        None,
        None,
        split=SplitCounts(8, 1, 0),
    )
    report.put("entries", [record])
    document = json.loads(report.render(1, "some stage failed"))
    assert list(document)[:4] == ["command", "version", "exit_code", "error"]
    assert document["command"] == "history"
    assert document["version"] == 1
    assert (document["exit_code"], document["error"]) == (1, "some stage failed")
    [entry] = document["entries"]
    assert entry["stage"] == "split"
    assert entry["status"] == "ok"
    assert entry["split"] == {"train": 8, "eval": 1, "orphaned": 0, "moved": 0}
    assert entry["cost"] is None


def test_known_secrets_are_masked_in_the_document() -> None:
    register("json-report-secret-0123")
    report = JsonReport("x")
    report.put("said", "key json-report-secret-0123 leaked")
    rendered = report.render(2, "refused json-report-secret-0123")
    assert "json-report-secret" not in rendered
    assert json.loads(rendered)["said"] == "key *** leaked"
