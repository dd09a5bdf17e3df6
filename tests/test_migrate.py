"""`overbrainer migrate [--dry-run]` and the «run overbrainer migrate» hint, through the command."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from overbrainer.config.errors import ConfigError
from overbrainer.config.hub_move import plan_hub_move
from overbrainer.events.types import Stage
from overbrainer.model.finish import FinishReason, ReasoningKind
from overbrainer.project.directory import PREDATES_HINT, Project, project_lock
from overbrainer.project.migrate import IgnoreState, plan_migration
from overbrainer.storage.history import HistoryRecord, HistoryStatus, append_history, read_history
from overbrainer.storage.records import Example, Exclusion, Message, Meta
from tests.train_helpers import axolotl_on_path

CONFIG = """\
# my project
[project]
name = "demo"

[[topics]]
name = "ownership"
subtopics = 1
questions_per_subtopic = 1

[providers.stub]
protocol = "openai"

[roles]
generator = { provider = "stub", model = "gen" }
parent = { provider = "stub", model = "parent" }

[training]
# the base
target = "local"
base_model = "Qwen/Qwen3-4B"
adapter = "qlora"
{extra}
[targets.local]
kind = "local"
runtime = "native"
"""


def config(extra: str) -> str:
    """The config text with `extra` at the end of `[training]`."""
    return CONFIG.replace("{extra}", extra)


def overbrainer(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`overbrainer -C root ARGS` to its end."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    return subprocess.run(
        [sys.executable, "-m", "overbrainer", "-C", str(root), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )


def answer(name: str, model: str, tokens: tuple[int, int], excluded: bool) -> str:
    """One answers.jsonl line."""
    exclusion = Exclusion.TRUNCATED if excluded else None
    meta = Meta(model, *tokens, FinishReason.STOP, ReasoningKind.RAW, exclusion)
    messages = (Message("user", f"question {name}"), Message("assistant", "an answer"))
    return Example(f"{name:0<16}", "ownership", "Basics", messages, meta).to_json() + "\n"


def old_project(root: Path, extra: str = "") -> Path:
    """A project as 0.3 left it: no version file, no state entry in .gitignore, two models."""
    (root / "overbrainer.toml").write_text(config(extra))
    (root / ".gitignore").write_text(".env\n/data/\n/runs/")
    (root / "data").mkdir()
    answers = root / "data" / "answers.jsonl"
    answers.write_text(
        answer("a", "parent", (10, 100), False)
        + answer("b", "other", (1, 2), False)
        + answer("c", "parent", (20, 200), True)
        + answer("d", "parent", (5, 50), False)
    )
    os.utime(answers, (1_790_000_000, 1_790_000_000))
    return root


def current_project(root: Path, extra: str = "", tail: str = "") -> Path:
    """A project at format 1 whose `[training]` also holds `extra`, with `tail` after it all."""
    (root / "overbrainer.toml").write_text(config(extra) + tail)
    (root / ".gitignore").write_text("/.overbrainer/\n")
    (root / ".overbrainer").mkdir()
    (root / ".overbrainer" / "version").write_text("1\n")
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` but the lock, with its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "lock"
    }


MIGRATED = [
    "added /.overbrainer/ to .gitignore",
    "backfilled the answers history of other: 1 answer(s), 0 excluded; tokens 1 in, 2 out",
    "backfilled the answers history of parent: 2 answer(s), 1 excluded; tokens 35 in, 350 out",
    "wrote .overbrainer/version: format 1",
]
AT = datetime.datetime.fromtimestamp(1_790_000_000, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_an_old_project_is_migrated_once(tmp_path: Path) -> None:
    root = old_project(tmp_path)
    done = overbrainer(root, "migrate")
    assert (done.returncode, done.stdout.splitlines(), done.stderr) == (0, MIGRATED, "")
    assert (root / ".gitignore").read_text() == ".env\n/data/\n/runs/\n/.overbrainer/\n"
    assert (root / ".overbrainer" / "version").read_text() == "1\n"
    history = root / ".overbrainer" / "history.jsonl"
    assert read_history(history) == [
        HistoryRecord(Stage.ANSWERS, AT, AT, HistoryStatus.OK, None, "other", 1, 0, 0, 0, 1, 2,
                      None, backfilled=True),
        HistoryRecord(Stage.ANSWERS, AT, AT, HistoryStatus.OK, None, "parent", 2, 0, 0, 1, 35,
                      350, None, backfilled=True),
    ]  # fmt: skip
    assert history.read_text().splitlines()[0] == (
        f'{{"stage":"answers","started_at":"{AT}","ended_at":"{AT}","status":"ok",'
        '"provider":null,"model":"other","done":1,"skipped":0,"failed":0,"excluded":0,'
        '"input_tokens":1,"output_tokens":2,"cost":null,"backfilled":true}'
    )
    before = snapshot(root)
    again = overbrainer(root, "migrate")
    assert (again.returncode, again.stdout, again.stderr) == (0, "nothing to migrate\n", "")
    assert snapshot(root) == before


def test_a_dry_run_says_the_same_and_changes_nothing(tmp_path: Path) -> None:
    root = old_project(tmp_path, extra='hub_model_id = "me/mentor"\n')
    before = snapshot(root)
    done = overbrainer(root, "migrate", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        'would move training.hub_model_id to [hub] repo = "me/mentor" (private, after_training)',
        *(line.replace("added", "would add").replace("backfilled", "would backfill")
          .replace("wrote", "would write") for line in MIGRATED),
    ]  # fmt: skip
    assert snapshot(root) == before
    # It took the lock all the same, which made the state directory and the lock file.
    assert sorted(p.name for p in (root / ".overbrainer").iterdir()) == ["lock"]


def test_a_dry_run_waits_for_no_one_but_takes_the_lock(tmp_path: Path) -> None:
    root = old_project(tmp_path)
    with project_lock(Project(root)):
        done = overbrainer(root, "migrate", "--dry-run")
    assert done.returncode == 2
    assert done.stderr == f"error: another overbrainer (pid {os.getpid()}) is using this project\n"


def test_hub_model_id_moves_to_the_hub_table_keeping_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    axolotl_on_path(monkeypatch, tmp_path / "bin")
    root = current_project(tmp_path, extra='hub_model_id = "me/mentor"  # deprecated\n')
    done = overbrainer(root, "migrate")
    assert (done.returncode, done.stdout.splitlines()) == (
        0,
        ['moved training.hub_model_id to [hub] repo = "me/mentor" (private, after_training)'],
    )
    expected = config("") + ('\n[hub]\nrepo = "me/mentor"\nprivate = true\nafter_training = true\n')
    assert (root / "overbrainer.toml").read_text() == expected
    # A base URL for the pre-flight (a loopback one needs no key); nothing is asked of it.
    (root / ".env").write_text("OVERBRAINER_PROVIDERS__STUB__BASE_URL=http://127.0.0.1:1/v1\n")
    check = overbrainer(root, "config", "check")
    assert check.returncode == 0, check.stderr
    assert overbrainer(root, "migrate").stdout == "nothing to migrate\n"


def test_an_existing_hub_repo_stays_and_the_old_key_goes(tmp_path: Path) -> None:
    tail = '\n[hub]\nrepo = "me/kept"\nprivate = false\n'
    root = current_project(tmp_path, extra='hub_model_id = "me/old"\n', tail=tail)
    done = overbrainer(root, "migrate")
    assert (done.returncode, done.stdout.splitlines()) == (
        0,
        [
            'kept [hub] repo = "me/kept"; dropped training.hub_model_id = "me/old"',
            "removed training.hub_model_id",
        ],
    )
    assert (root / "overbrainer.toml").read_text() == config("") + tail


def test_a_hub_table_without_a_repo_gets_it_and_keeps_its_flags() -> None:
    text = config('hub_model_id = "me/m"\n') + "\n[hub]\nprivate = false\n"
    move = plan_hub_move(text)
    assert move is not None
    assert tomllib.loads(move.text)["hub"] == {
        "repo": "me/m",
        "private": False,
        "after_training": True,
    }
    assert move.text == config("") + (
        '\n[hub]\nrepo = "me/m"\nafter_training = true\nprivate = false\n'
    )


@pytest.mark.parametrize(
    "text",
    [
        'training.hub_model_id = "me/m"\n[project]\nname = "x"\n',
        '[training]\nnote = """\n[hub]\n"""\nhub_model_id = "me/m"\n',
        'training = { target = "local", hub_model_id = "me/m" }\n',
    ],
)
def test_what_cannot_be_moved_line_by_line_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match=r"^cannot move training\.hub_model_id"):
        plan_hub_move(text)


def test_no_key_or_bad_toml_has_nothing_to_move() -> None:
    assert plan_hub_move(config("epochs = 2\n")) is None
    assert plan_hub_move('[training\nhub_model_id = "me/x"\n') is None


def test_the_history_of_a_recorded_project_is_not_backfilled(tmp_path: Path) -> None:
    root = old_project(tmp_path)
    history = root / ".overbrainer" / "history.jsonl"
    recorded = HistoryRecord(Stage.ANSWERS, AT, AT, HistoryStatus.OK, "stub", "parent", 3)
    append_history(history, recorded)
    done = overbrainer(root, "migrate")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"not backfilling the answers history: {history} already has answers entries",
        "added /.overbrainer/ to .gitignore",
        "wrote .overbrainer/version: format 1",
    ]
    assert read_history(history) == [recorded]


def test_a_stopped_backfill_adds_only_the_missing_models(tmp_path: Path) -> None:
    root = old_project(tmp_path)
    history = root / ".overbrainer" / "history.jsonl"
    append_history(history, HistoryRecord(Stage.ANSWERS, AT, AT, HistoryStatus.OK, None, "other",
                                          1, backfilled=True))  # fmt: skip
    with history.open("a") as file:
        file.write('{"stage":"answ')  # the next model's line, cut by a crash
    done = overbrainer(root, "migrate")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [MIGRATED[0], MIGRATED[2], MIGRATED[3]]
    models = [(r.model, r.backfilled) for r in read_history(history)]
    assert models == [("other", True), ("parent", True)]


@pytest.mark.parametrize(
    "line", [".overbrainer", ".overbrainer/", "/.overbrainer", " /.overbrainer/ ", None]
)
def test_the_gitignore_entries_that_already_count(tmp_path: Path, line: str | None) -> None:
    root = current_project(tmp_path)
    if line is None:
        (root / ".gitignore").unlink()
    else:
        (root / ".gitignore").write_text(f".env\n{line}\n")
    plan = plan_migration(Project(root))
    assert plan.changes == (() if line is not None else (IgnoreState(None),))
    if line is None:
        IgnoreState(None).apply(Project(root))
        assert (root / ".gitignore").read_text() == "/.overbrainer/\n"


def test_a_newer_format_is_refused_and_nothing_written(tmp_path: Path) -> None:
    root = old_project(tmp_path)
    (root / ".overbrainer").mkdir()
    (root / ".overbrainer" / "version").write_text("2\n")
    before = snapshot(root)
    done = overbrainer(root, "migrate")
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "error: this project uses format 2, newer than the format 1 this overbrainer knows: "
        "upgrade overbrainer\n",
    )
    assert snapshot(root) == before


def test_the_hint_ends_every_command_on_an_old_project_only(tmp_path: Path) -> None:
    root = old_project(tmp_path)
    shown = overbrainer(root, "history")
    assert shown.returncode == 0
    assert shown.stderr.splitlines() == [PREDATES_HINT]
    failing = overbrainer(root, "split", "--topic", "nope")
    assert failing.returncode == 2
    assert failing.stderr.splitlines() == ["error: unknown topic `nope`", PREDATES_HINT]
    assert overbrainer(root, "migrate").returncode == 0
    after = overbrainer(root, "history")
    assert (after.returncode, after.stderr) == (0, "")


def test_no_hint_where_no_command_ran_or_the_command_is_exempt(tmp_path: Path) -> None:
    root = old_project(tmp_path)
    assert overbrainer(root, "history", "--bogus").stderr.count(PREDATES_HINT) == 0
    assert overbrainer(root, "history", "--help").stderr == ""
    assert overbrainer(root, "init").stderr == f"error: {root}/overbrainer.toml already exists\n"
    assert overbrainer(root, "migrate", "--dry-run").stderr == ""
    assert overbrainer(tmp_path / "elsewhere", "history").stderr.count(PREDATES_HINT) == 0
