"""`.overbrainer/history.jsonl`: field order, crash-safe appends, tolerant reads, totals."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from overbrainer.events.types import Stage
from overbrainer.storage import jsonl
from overbrainer.storage.history import (
    EMPTY_HISTORY,
    HistoryRecord,
    HistoryStatus,
    SplitCounts,
    append_history,
    format_history,
    read_history,
)

ANSWERS = HistoryRecord(
    stage=Stage.ANSWERS,
    started_at="2026-09-27T10:00:00Z",
    ended_at="2026-09-27T10:05:00Z",
    status=HistoryStatus.OK,
    provider="openrouter",
    model="deepseek/deepseek-r1",
    done=4,
    skipped=1,
    failed=0,
    excluded=2,
    input_tokens=400,
    output_tokens=200,
    cost=0.0042,
)
SPLIT = HistoryRecord(
    stage=Stage.SPLIT,
    started_at="2026-09-27T10:06:00Z",
    ended_at="2026-09-27T10:06:00Z",
    status=HistoryStatus.OK,
    provider=None,
    model=None,
    excluded=0,
    split=SplitCounts(train=3, eval=1, orphaned=0),
)


def test_lines_keep_the_reference_field_order_and_omit_what_is_absent() -> None:
    assert ANSWERS.to_json() == (
        '{"stage":"answers","started_at":"2026-09-27T10:00:00Z","ended_at":"2026-09-27T10:05:00Z",'
        '"status":"ok","provider":"openrouter","model":"deepseek/deepseek-r1","done":4,'
        '"skipped":1,"failed":0,"excluded":2,"input_tokens":400,"output_tokens":200,"cost":0.0042}'
    )
    assert SPLIT.to_json().endswith(',"cost":null,"split":{"train":3,"eval":1,"orphaned":0}}')
    assert HistoryRecord.from_json(ANSWERS.to_json()) == ANSWERS


def test_append_after_a_crash_loses_only_the_broken_line(tmp_path: Path) -> None:
    path = tmp_path / ".overbrainer" / "history.jsonl"
    assert append_history(path, ANSWERS)
    with open(path, "a", encoding="utf-8") as file:
        file.write('{"stage":"ans')
    assert append_history(path, SPLIT)
    assert path.read_text(encoding="utf-8").splitlines()[2] == SPLIT.to_json()
    assert read_history(path) == [ANSWERS, SPLIT]


def test_bad_lines_are_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text(f"{ANSWERS.to_json()}\nnot json\n\n{SPLIT.to_json()}\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert read_history(path) == [ANSWERS, SPLIT]
    assert any(r.getMessage().startswith(f"skipping line 2 of {path}") for r in caplog.records)
    assert read_history(tmp_path / "missing.jsonl") == []


def test_a_write_error_is_only_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with caplog.at_level(logging.WARNING):
        assert not append_history(blocker / "history.jsonl", ANSWERS)
    assert any("cannot record the answers stage" in r.getMessage() for r in caplog.records)


def test_history_output_with_and_without_all() -> None:
    assert format_history([]) == [EMPTY_HISTORY] == ["no stage has run yet"]
    unpriced = HistoryRecord(
        stage=Stage.ANSWERS,
        started_at="2026-09-28T09:00:00Z",
        ended_at="2026-09-28T09:01:00Z",
        status=HistoryStatus.INTERRUPTED,
        provider="openrouter",
        model=None,
        done=1,
    )
    assert format_history([ANSWERS, SPLIT, unpriced], all_entries=True) == [
        "2026-09-27T10:00:00Z  answers    ok           deepseek/deepseek-r1  4 done, 1 skipped, "
        "0 failed, 2 excluded; tokens 400 in, 200 out; $0.0042",
        "2026-09-27T10:06:00Z  split      ok           train 3, eval 1, excluded 0, orphaned 0",
        "2026-09-28T09:00:00Z  answers    interrupted  -  1 done, 0 skipped, 0 failed, "
        "0 excluded; tokens 0 in, 0 out; cost unknown",
    ]
    totals = format_history([ANSWERS, SPLIT, unpriced])
    assert totals[0] == ("answers    2 run(s), 5 done, 0 failed; tokens 400 in, 200 out; $0.0042+")
    assert totals[-1].startswith("total      3 run(s), 5 done, 0 failed; tokens 400 in, 200 out;")


def test_history_and_data_files_share_the_appender(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "history.jsonl"
    opened: list[tuple[Path, bool]] = []
    real_open = jsonl.open_file_appender

    def recording_open(target: Path, keep_torn: bool = False) -> jsonl.Appender:
        opened.append((target, keep_torn))
        return real_open(target, keep_torn)

    monkeypatch.setattr(jsonl, "open_file_appender", recording_open)
    assert append_history(path, ANSWERS)
    # The history is never cut: a torn line is ended and then skipped by the reader.
    assert opened == [(path, True)]


def test_a_judge_line_reads_back_and_totals_after_the_pipeline_stages(tmp_path: Path) -> None:
    judge = HistoryRecord(
        stage=Stage.JUDGE,
        started_at="2026-09-27T11:00:00Z",
        ended_at="2026-09-27T11:01:00Z",
        status=HistoryStatus.INTERRUPTED,
        provider="openrouter",
        model="openai/gpt-5",
        done=3,
        skipped=2,
        input_tokens=1500,
        output_tokens=90,
        cost=0.0021,
        reason="spend cap reached: $0.0021 of $0.0100",
    )
    path = tmp_path / "history.jsonl"
    for record in (judge, ANSWERS):
        assert append_history(path, record)
    assert path.read_text().startswith('{"stage":"judge","started_at":"2026-09-27T11:00:00Z",')
    assert read_history(path) == [judge, ANSWERS]
    assert format_history(read_history(path)) == [
        "answers    1 run(s), 4 done, 0 failed; tokens 400 in, 200 out; $0.0042",
        "judge      1 run(s), 3 done, 0 failed; tokens 1500 in, 90 out; $0.0021",
        "total      2 run(s), 7 done, 0 failed; tokens 1900 in, 290 out; $0.0063",
    ]
    assert format_history([judge], all_entries=True) == [
        "2026-09-27T11:00:00Z  judge      interrupted  openai/gpt-5  3 done, 2 skipped, 0 failed, "
        "0 excluded; tokens 1500 in, 90 out; $0.0021 (spend cap reached: $0.0021 of $0.0100)"
    ]
