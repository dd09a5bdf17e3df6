"""Run IDs, the exclusive claim of `runs/<id>`, and `run.json` bytes, reading and listing."""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from overbrainer.targets.claim import ClaimError
from overbrainer.training.run_store import (
    Container,
    InvalidRecord,
    Job,
    RunNotFound,
    RunRecord,
    Runs,
    RunsError,
    RunState,
    Snapshot,
    base_run_id,
    claim_dir,
    is_valid_run_id,
    new_owner,
    parse_rfc3339,
    project_slug,
    rfc3339,
)

NOW = dt.datetime(2026, 9, 22, 14, 30, 5, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Malware Development", "malware_development"),
        ("  GPT-4o mini!! v2 ", "gpt_4o_mini_v2"),
        ("Café Über", "caf_ber"),
        ("模型", "run"),
        ("", "run"),
        ("___", "run"),
        ("a" * 39 + " b", "a" * 39),
        ("x" * 50, "x" * 40),
    ],
)
def test_project_slug_follows_the_reference_examples(name: str, slug: str) -> None:
    assert project_slug(name) == slug


def test_base_id_is_the_slug_and_the_utc_time() -> None:
    paris = dt.timezone(dt.timedelta(hours=2))
    assert base_run_id("p", NOW.astimezone(paris)) == "p_20260922-143005"
    assert rfc3339(NOW.astimezone(paris)) == "2026-09-22T14:30:05Z"
    assert parse_rfc3339("2026-09-22T14:30:05Z") == NOW
    for text in ("2026-09-22T14:30:05", "2026-13-22T14:30:05Z", "2026-09-22 14:30:05Z", ""):
        assert parse_rfc3339(text) is None


@pytest.mark.parametrize(
    ("run_id", "valid"),
    [
        ("p_20260922-143005", True),
        ("p_20260922-143005_99", True),
        ("20260922-143005-a1b2", True),
        ("a" * 64, True),
        ("a" * 65, False),
        ("_x", False),
        ("-x", False),
        ("", False),
        ("../etc", False),
        ("a/b", False),
        ("a.b", False),
    ],
)
def test_run_id_validity(run_id: str, valid: bool) -> None:
    assert is_valid_run_id(run_id) is valid


def test_claims_number_collisions_from_2_and_give_up_after_99(tmp_path: Path) -> None:
    runs = Runs(tmp_path / "runs")
    first = runs.claim("My Project", NOW)
    second = runs.claim("My Project", NOW)
    (tmp_path / "runs" / "my_project_20260922-143005_3").mkdir()
    third = runs.claim("My Project", NOW)
    assert (first, second, third) == (
        "my_project_20260922-143005",
        "my_project_20260922-143005_2",
        "my_project_20260922-143005_4",
    )
    for number in range(5, 100):
        assert runs.claim("My Project", NOW) == f"my_project_20260922-143005_{number}"
    with pytest.raises(RunsError) as caught:
        runs.claim("My Project", NOW)
    assert caught.value.message == (
        "runs my_project_20260922-143005 to my_project_20260922-143005_99 all exist"
    )


def test_a_refused_claim_releases_its_directory_and_tries_the_next(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    seen: list[str] = []

    def accept(run_id: str, path: Path) -> bool:
        seen.append(run_id)
        assert path.is_dir()
        return len(seen) > 1

    assert runs.claim("p", NOW, accept) == "p_20260922-143005_2"
    assert seen == ["p_20260922-143005", "p_20260922-143005_2"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p_20260922-143005_2"]


def test_claim_dir_is_exclusive_per_owner(tmp_path: Path) -> None:
    owner = new_owner()
    assert len(owner) == 16 and int(owner, 16) >= 0
    assert claim_dir(tmp_path / "r", owner) is True
    assert claim_dir(tmp_path / "r", owner) is True
    assert claim_dir(tmp_path / "r", "0123456789abcdef") is False
    assert (tmp_path / "r" / ".claim").read_text() == owner + "\n"


RUNNING = RunRecord(
    id="p_20260922-143005",
    target="box",
    created="2026-09-22T14:30:05Z",
    remote_dir="/w/p_20260922-143005",
    job=Job("/w/p_20260922-143005", 4242, Container("podman", "overbrainer-p_20260922-143005")),
    state=RunState.RUNNING,
    snapshots=True,
)

RUNNING_JSON = """{
  "id": "p_20260922-143005",
  "target": "box",
  "created": "2026-09-22T14:30:05Z",
  "remote_dir": "/w/p_20260922-143005",
  "job": {
    "dir": "/w/p_20260922-143005",
    "pid": 4242,
    "container": {
      "engine": "podman",
      "name": "overbrainer-p_20260922-143005"
    }
  },
  "state": "running",
  "message": null,
  "snapshots": true
}
"""

STOPPED_JSON = """{
  "id": "p_20260922-143005_2",
  "target": "local",
  "created": "2026-09-22T14:30:05Z",
  "remote_dir": "/home/u/p/runs/p_20260922-143005_2",
  "job": {
    "dir": "/home/u/p/runs/p_20260922-143005_2",
    "pid": 77,
    "container": null
  },
  "state": "stopped",
  "message": "arrêté — «ok»",
  "snapshot": {
    "checkpoint": "output/checkpoint-12",
    "step": 12,
    "reason": "disk"
  },
  "resumed_from": "p_20260921-000000",
  "snapshots": true
}
"""


def test_run_json_bytes_match_the_reference_layout(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    runs.save(RUNNING)
    path = tmp_path / RUNNING.id / "run.json"
    assert path.read_text(encoding="utf-8") == RUNNING_JSON
    stopped = RunRecord.from_json(STOPPED_JSON)
    assert stopped.snapshot == Snapshot("output/checkpoint-12", 12, "disk")
    assert stopped.to_json() == STOPPED_JSON
    runs.save(stopped)
    assert (tmp_path / stopped.id / "run.json").read_bytes() == STOPPED_JSON.encode()
    assert sorted(p.name for p in (tmp_path / stopped.id).iterdir()) == ["run.json"]


def test_preparing_record_leaves_out_absent_extras(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    record = runs.create("p", "local", lambda run_id: f"/r/{run_id}", NOW)
    assert (tmp_path / record.id / "run.json").read_text() == (
        "{\n"
        '  "id": "p_20260922-143005",\n'
        '  "target": "local",\n'
        '  "created": "2026-09-22T14:30:05Z",\n'
        '  "remote_dir": "/r/p_20260922-143005",\n'
        '  "job": null,\n'
        '  "state": "preparing",\n'
        '  "message": null\n'
        "}\n"
    )
    assert runs.load(record.id) == record
    done = attrs.evolve(record, state=RunState.FAILED, message="the job exited with code 3")
    runs.save(done)
    assert runs.load(record.id) == done


def test_reading_tolerates_unknown_and_missing_optional_fields() -> None:
    text = json.dumps(
        {
            "id": "20260922-143005-a1b2",
            "target": "t",
            "created": "2026-09-22T14:30:05Z",
            "remote_dir": "/r",
            "state": "succeeded",
            "future_field": {"x": 1},
        }
    )
    record = RunRecord.from_json(text)
    assert (record.job, record.message, record.snapshot, record.snapshots) == (
        None,
        None,
        None,
        False,
    )
    assert record.state is RunState.SUCCEEDED


@pytest.mark.parametrize("pid", [0, 1, -5])
def test_a_record_with_pid_0_or_1_fails_to_load(tmp_path: Path, pid: int) -> None:
    bad = json.loads(RUNNING_JSON)
    bad["job"]["pid"] = pid
    folder = tmp_path / RUNNING.id
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps(bad))
    with pytest.raises(InvalidRecord) as caught:
        Runs(tmp_path).load(RUNNING.id)
    assert caught.value.message.startswith(f"runs/{RUNNING.id}/run.json is not a valid run record")


def test_json_errors_name_line_and_column_never_content(tmp_path: Path) -> None:
    with pytest.raises(InvalidRecord) as caught:
        RunRecord.from_json('{\n  "id": "sk-secret-value",\n  oops\n}', "runs/x/run.json")
    assert caught.value.message == "runs/x/run.json is not a valid run record (line 3, column 3)"
    with pytest.raises(InvalidRecord) as caught:
        RunRecord.from_json(RUNNING_JSON.replace('"running"', '"sk-secret"'))
    assert "sk-secret" not in caught.value.message


def test_unknown_and_invalid_ids_are_not_found(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    for run_id in ("nope", "../etc", "/tmp/x"):
        with pytest.raises(RunNotFound) as caught:
            runs.load(run_id)
        assert caught.value.message == f"no run {run_id} in runs/"
        assert caught.value.exit_code == 2


def test_list_orders_by_creation_then_id_and_skips_unreadable(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runs = Runs(tmp_path)
    late = attrs.evolve(RUNNING, id="a_late", created="2026-09-23T00:00:00Z")
    early = attrs.evolve(RUNNING, id="z_early", created="2026-09-21T00:00:00Z")
    same = attrs.evolve(RUNNING, id="b_same", created="2026-09-23T00:00:00Z")
    for record in (late, early, same):
        runs.save(record)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "run.json").write_text("not json")
    (tmp_path / "empty").mkdir()
    (tmp_path / ".hf-cache").mkdir()
    with caplog.at_level(logging.WARNING):
        assert runs.ids() == ["z_early", "a_late", "b_same"]
    assert [r.message for r in caplog.records] == [
        "skipping the unreadable record of run broken: "
        "runs/broken/run.json is not a valid run record (line 1, column 1)"
    ]
    assert Runs(tmp_path / "absent").list() == []


_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)


@given(
    message=st.none() | _text,
    target=_text,
    pid=st.integers(2, 2**32 - 1),
    step=st.integers(0, 10**9),
    state=st.sampled_from(list(RunState)),
    snapshots=st.booleans(),
)
def test_records_round_trip(
    message: str | None, target: str, pid: int, step: int, state: RunState, snapshots: bool
) -> None:
    record = RunRecord(
        id="r1",
        target=target,
        created="2026-09-22T14:30:05Z",
        remote_dir=target,
        job=Job(target, pid),
        state=state,
        message=message,
        snapshot=Snapshot(f"output/checkpoint-{step}", step, "requested"),
        snapshots=snapshots,
    )
    assert RunRecord.from_json(record.to_json()) == record


def test_an_unwritable_runs_directory_is_a_one_line_error(tmp_path: Path) -> None:
    blocker = tmp_path / "runs"
    blocker.write_text("a file, not a directory")
    with pytest.raises(RunsError) as caught:
        Runs(blocker).claim("p", NOW)
    assert caught.value.message == f"cannot create {blocker}: File exists"
    with pytest.raises(ClaimError) as claim_caught:
        claim_dir(blocker / "r", "0123456789abcdef")
    assert claim_caught.value.message == f"cannot claim {blocker / 'r'}: Not a directory"


def test_update_is_a_compare_and_set_that_other_saves_wait_for(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    runs.save(RUNNING)
    before = runs.record_path(RUNNING.id).read_bytes()
    assert runs.update(RUNNING.id, lambda record: None) == RUNNING
    assert runs.record_path(RUNNING.id).read_bytes() == before
    entered, release = threading.Event(), threading.Event()

    def cancel(record: RunRecord) -> RunRecord:
        entered.set()
        release.wait(10)
        return attrs.evolve(record, state=RunState.CANCELLED)

    updater = threading.Thread(target=runs.update, args=(RUNNING.id, cancel))
    updater.start()
    assert entered.wait(10)
    failed = attrs.evolve(RUNNING, state=RunState.FAILED, message="lost")
    saver = threading.Thread(target=runs.save, args=(failed,))
    saver.start()
    saver.join(0.3)
    assert saver.is_alive()  # held off by the update's lock on runs/<id>/
    release.set()
    updater.join(10)
    saver.join(10)
    assert runs.load(RUNNING.id) == failed  # written after the update, never between
    assert sorted(p.name for p in (tmp_path / RUNNING.id).iterdir()) == ["run.json"]
