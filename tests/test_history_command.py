"""`overbrainer history [--all]` through the real command, on a history file written here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LINES = [
    '{"stage":"subtopics","started_at":"2026-09-27T10:00:00Z","ended_at":"2026-09-27T10:00:05Z",'
    '"status":"ok","provider":"openrouter","model":"qwen/qwen3","done":10,"skipped":0,"failed":0,'
    '"excluded":0,"input_tokens":1200,"output_tokens":300,"cost":0.0015}',
    '{"stage":"answers","started_at":"2026-09-27T10:05:00Z","ended_at":"2026-09-27T10:09:00Z",'
    '"status":"interrupted","provider":"openrouter","model":"deepseek/deepseek-r1","done":40,'
    '"skipped":0,"failed":0,"excluded":3,"input_tokens":8000,"output_tokens":90000,"cost":null}',
    "this line is broken",
    '{"stage":"answers","started_at":"2026-09-27T11:00:00Z","ended_at":"2026-09-27T11:30:00Z",'
    '"status":"failed","provider":"openrouter","model":"deepseek/deepseek-r1","done":55,'
    '"skipped":40,"failed":2,"excluded":4,"input_tokens":9000,"output_tokens":120000,'
    '"cost":0.52}',
    '{"stage":"split","started_at":"2026-09-27T12:00:00Z","ended_at":"2026-09-27T12:00:00Z",'
    '"status":"ok","provider":null,"model":null,"done":0,"skipped":0,"failed":0,"excluded":7,'
    '"input_tokens":0,"output_tokens":0,"cost":null,"split":{"train":80,"eval":8,"orphaned":1}}',
    '{"stage":"answers","started_at":"2026-09-20T09:00:00Z","ended_at":"2026-09-20T09:00:00Z",'
    '"status":"ok","provider":null,"model":"deepseek/deepseek-r1","done":5,"skipped":0,'
    '"failed":0,"excluded":1,"input_tokens":100,"output_tokens":2000,"cost":null,'
    '"backfilled":true}',
]


def project(tmp_path: Path, history: list[str] | None) -> Path:
    (tmp_path / "overbrainer.toml").write_text('[project]\nname = "x"\n')
    (tmp_path / ".overbrainer").mkdir(exist_ok=True)
    (tmp_path / ".overbrainer" / "version").write_text("1\n")  # a current project: no hint
    if history is not None:
        (tmp_path / ".overbrainer" / "history.jsonl").write_text("\n".join(history) + "\n")
    return tmp_path


def history(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    env["NO_COLOR"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "overbrainer", "history", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_totals_per_stage_then_overall(tmp_path: Path) -> None:
    done = history(project(tmp_path, LINES))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "subtopics  1 run(s), 10 done, 0 failed; tokens 1200 in, 300 out; $0.0015",
        "answers    3 run(s), 100 done, 2 failed; tokens 17100 in, 212000 out; $0.5200+",
        "split      1 run(s), 0 done, 0 failed; tokens 0 in, 0 out; cost unknown",
        "total      5 run(s), 110 done, 2 failed; tokens 18300 in, 212300 out; $0.5215+",
    ]
    assert "skipping line 3 of " in done.stderr
    assert str(Path(".overbrainer") / "history.jsonl") in done.stderr
    assert not (tmp_path / ".overbrainer" / "lock").exists()


def test_all_lists_every_entry_oldest_first_as_written(tmp_path: Path) -> None:
    done = history(project(tmp_path, LINES), "--all")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "2026-09-27T10:00:00Z  subtopics  ok           qwen/qwen3  10 done, 0 skipped, 0 failed, "
        "0 excluded; tokens 1200 in, 300 out; $0.0015",
        "2026-09-27T10:05:00Z  answers    interrupted  deepseek/deepseek-r1  40 done, 0 skipped, "
        "0 failed, 3 excluded; tokens 8000 in, 90000 out; cost unknown",
        "2026-09-27T11:00:00Z  answers    failed       deepseek/deepseek-r1  55 done, 40 skipped, "
        "2 failed, 4 excluded; tokens 9000 in, 120000 out; $0.5200",
        "2026-09-27T12:00:00Z  split      ok           train 80, eval 8, excluded 7, orphaned 1",
        "2026-09-20T09:00:00Z  answers    ok           deepseek/deepseek-r1  5 done, 0 skipped, "
        "0 failed, 1 excluded; tokens 100 in, 2000 out; cost unknown (backfilled)",
    ]


@pytest.mark.parametrize("lines", [None, []])
def test_no_history_yet(tmp_path: Path, lines: list[str] | None) -> None:
    for args in ((), ("--all",)):
        done = history(project(tmp_path, lines), *args)
        assert (done.returncode, done.stdout) == (0, "no stage has run yet\n")


def test_outside_a_project(tmp_path: Path) -> None:
    done = history(tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: cannot read overbrainer.toml: No such file or directory; this directory is "
        "not in an overbrainer project: make one with `overbrainer init`"
    )


def test_an_unreadable_history(tmp_path: Path) -> None:
    root = project(tmp_path, None)
    (root / ".overbrainer" / "history.jsonl").mkdir(parents=True)
    done = history(root)
    assert done.returncode == 1
    assert done.stderr.strip() == "error: cannot read .overbrainer/history.jsonl: Is a directory"


def test_json_gives_totals_and_entries_as_one_document(tmp_path: Path) -> None:
    done = history(project(tmp_path, LINES), "--all", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)  # stdout holds the document and nothing else
    assert (document["command"], document["exit_code"], document["error"]) == ("history", 0, None)
    assert list(document["stages"]) == ["subtopics", "answers", "split"]
    assert document["stages"]["subtopics"] == {
        "runs": 1,
        "done": 10,
        "failed": 0,
        "input_tokens": 1200,
        "output_tokens": 300,
        "cost": "0.0015",
        "cost_partial": False,
    }
    answers = document["stages"]["answers"]
    assert (answers["runs"], answers["cost"], answers["cost_partial"]) == (3, "0.52", True)
    assert document["total"]["cost"] == "0.5215"
    assert document["total"]["runs"] == 5
    entries = document["entries"]
    assert entries[0]["started_at"] == "2026-09-27T10:00:00Z"  # as the file holds them
    assert entries[3]["split"] == {"train": 80, "eval": 8, "orphaned": 1, "moved": 0}
    assert len(document["entries"]) == 5  # the broken line is skipped, with its warning
    assert "skipping line 3" in done.stderr


def test_json_without_a_project_is_a_document_with_the_error_and_exit_2(tmp_path: Path) -> None:
    done = history(tmp_path, "--json")
    assert done.returncode == 2
    document = json.loads(done.stdout)
    assert document["exit_code"] == 2
    assert "overbrainer.toml" in document["error"]
    assert "entries" not in document
    assert done.stderr.startswith("error: ")
