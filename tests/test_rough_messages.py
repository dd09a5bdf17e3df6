"""Messages a new user hit (issue 40) through the real command: one exact line, its exit code,
nothing written."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from overbrainer.config.toml_errors import syntax_error_at
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Reply
from tests.hub_support import RUN_ID, hub_env, make_run
from tests.pipeline_support import history, make_project, write_questions
from tests.pipeline_support import overbrainer as run_stage
from tests.test_bad_input import snapshot
from tests.test_cli_bad_input import overbrainer as plain
from tests.test_cli_global import overbrainer
from tests.test_push import push


def test_a_table_given_twice_names_the_table_and_both_lines(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    config = root / "overbrainer.toml"
    text = config.read_text()
    first = text.split("\n").index("[pipeline]") + 1
    config.write_text(text + "\n[pipeline]\nconcurrency = 2\n")
    second = text.count("\n") + 2
    before = snapshot(root)
    done = overbrainer("-C", "p", "config", "check", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "error: invalid configuration: TOML syntax error in overbrainer.toml at line "
        f"{second}, column 10: table [pipeline] is defined twice (first at line {first})\n",
    )
    assert snapshot(root) == before


@pytest.mark.parametrize(
    ("text", "at"),
    [
        (
            '[a.b]\nx = 1\n[a]\n[ a . "b" ]  # again\n',
            " at line 4, column 11: table [a.b] is defined twice (first at line 1)",
        ),
        ("[[t]]\n[t]\n", " at line 2, column 3: table [t] is defined twice (first at line 1)"),
        ("a = {b = 1}\n[a]\n", " at line 2, column 3: table [a] is defined twice"),
        ("x = \n", " at line 1, column 5"),
    ],
)
def test_what_a_toml_error_says(text: str, at: str) -> None:
    with pytest.raises(tomllib.TOMLDecodeError) as caught:
        tomllib.loads(text)
    assert syntax_error_at(text, caught.value) == at


def test_a_key_given_twice_is_named(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    config = root / "overbrainer.toml"
    text = config.read_text().replace("max_retries = 2\n", "max_retries = 2\nmax_retries = 3\n")
    config.write_text(text)
    line = text.split("\n").index("max_retries = 3") + 1
    done = overbrainer("-C", "p", "config", "check", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2,
        "error: invalid configuration: TOML syntax error in overbrainer.toml at line "
        f"{line}, column 16: key `max_retries` is defined twice\n",
    )


def test_a_missing_directory_is_said_to_be_missing_with_its_init(tmp_path: Path) -> None:
    done = overbrainer("-C", "missing", "history", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "error: cannot read missing/overbrainer.toml: No such file or directory; missing does "
        "not exist: make a project there with `overbrainer init missing`\n",
    )
    assert list(tmp_path.iterdir()) == []


def test_a_directory_outside_any_project_gets_its_init(tmp_path: Path) -> None:
    (tmp_path / "my dir").mkdir()
    done = overbrainer("-C", "my dir", "history", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2,
        "error: cannot read my dir/overbrainer.toml: No such file or directory; my dir is not "
        "in an overbrainer project: make one with `overbrainer init 'my dir'`\n",
    )
    assert [p.name for p in tmp_path.rglob("*")] == ["my dir"]


def test_init_under_dash_c_hints_with_dash_c(tmp_path: Path) -> None:
    done = overbrainer("-C", "gi3", "init", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (
        0,
        "next: copy .env.example to .env and put the provider's key in it, "
        "then `overbrainer -C gi3 config check` and `overbrainer -C gi3 run`\n",
    )
    # The hint works where it was printed: its command finds the project just written.
    hinted = overbrainer("-C", "gi3", "history", cwd=tmp_path)
    assert (hinted.returncode, hinted.stdout) == (0, "no stage has run yet\n")
    demo = overbrainer("-C", "gi4", "init", "--demo", cwd=tmp_path)
    assert demo.stdout == "next: make the demo dataset with `overbrainer -C gi4 run --no-train`\n"


def test_compare_of_a_failed_run_suggests_nothing_that_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "p"
    make_run(root, files={}, state="failed")
    before = snapshot(root)
    done = plain("-C", str(root), "compare", "--run", RUN_ID)
    # Before, it said `run \`overbrainer export RUN\` first`, which export then refused.
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        f"error: run {RUN_ID} is failed: only a succeeded or stopped run can be exported and "
        "compared; `overbrainer runs ls` lists the runs\n",
    )
    assert snapshot(root) == before


def test_runs_ls_with_only_unreadable_runs_says_so(tmp_path: Path) -> None:
    root = tmp_path / "p"
    run_dir = make_run(root, files={})
    (run_dir / "run.json").write_text("{not json")
    done = plain("-C", str(root), "runs", "ls")
    assert (done.returncode, done.stdout) == (0, "")
    *_, warning, last = done.stderr.splitlines()
    assert f"skipping the unreadable record of run {RUN_ID}" in warning
    assert last == f"no readable runs (1 skipped: {RUN_ID}; see the warning above)"


async def test_an_unknown_cost_is_never_called_estimated(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    write_questions(root, 2)
    # No prices listed, and replies without usage: the tokens are estimated, the cost unknown.
    async with open_stub(lambda _: Reply(content="A.", reasoning="R.", usage=None)) as stub:
        result = await run_stage(root, "answers", url=stub.url)
    assert result.code == 0, result.stderr
    [line] = result.out_lines
    assert line.startswith("answers: 2 done, 0 skipped, 0 failed, 0 excluded; tokens "), line
    assert line.endswith(" out; cost unknown"), line
    [record] = history(root)
    assert (record.cost, record.cost_estimated) == (None, True)
    shown = overbrainer("-C", "p", "history", "--all", cwd=tmp_path)
    assert shown.stdout.rstrip().endswith("out; cost unknown"), shown.stdout
    assert "(estimated)" not in shown.stdout


async def test_a_question_over_64_kib_is_refused_naming_its_line(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 1)
    before = snapshot(root)
    limit = 64 * 1024
    file = tmp_path / "q.jsonl"
    rows = ["Fine?", "é" * (limit // 2), "x" * (limit + 1)]  # at the limit, then one byte over
    file.write_text("".join(json.dumps({"question": row}) + "\n" for row in rows))
    args = ("import", "questions", str(file), "--topic", "ownership")
    done = await run_stage(root, *args, url="http://127.0.0.1:9")
    assert (done.code, done.stdout, done.stderr) == (
        2,
        "",
        f"error: {file}:3: the question is 65,537 bytes, over the limit of 65,536 bytes "
        "(64 KiB) for one question\n",
    )
    assert snapshot(root) == before
    file.write_text("".join(json.dumps({"question": row}) + "\n" for row in rows[:2]))
    accepted = await run_stage(root, *args, url="http://127.0.0.1:9")
    assert accepted.code == 0, accepted.stderr


def test_a_hub_whose_name_does_not_resolve_is_named(tmp_path: Path) -> None:
    # `.invalid` never resolves (RFC 2606), offline or not: before, `[Errno -2] Name or service
    # not known` was all the user saw.
    root = tmp_path / "project"
    make_run(root)
    before = snapshot(root)
    result = push(root, hub_env(tmp_path, "https://hub.nonexistent.invalid"))
    assert (result.returncode, result.stdout) == (1, ""), result.stderr
    assert result.stderr.splitlines()[-1] == (
        "error: cannot reach hub.nonexistent.invalid: name not resolved"
    )
    assert "Errno" not in result.stderr
    assert snapshot(root) == before
