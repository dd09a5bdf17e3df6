"""The exit-code contract of docs/exit-codes.md, one test per row, through the real command."""

from __future__ import annotations

import importlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import click
import pytest
import trio

from overbrainer.cli.group import cli
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.model import errors
from tests.pipeline_support import (
    PRICES,
    make_project,
    overbrainer,
    start,
    wait_until,
    write_questions,
)
from tests.train_helpers import make_project as make_training_project
from tests.train_helpers import overbrainer as train_command
from tests.train_helpers import standin_env

DOC = Path(__file__).parent.parent / "docs" / "exit-codes.md"


def leaf_commands() -> list[tuple[str, ...]]:
    """Every command the group has, as the words that name it (`("runs", "ls")`)."""
    importlib.import_module("overbrainer.cli.commands_registry")  # the group's lazy commands
    ctx = click.Context(cli)
    found: list[tuple[str, ...]] = [("train",)]  # a group that is also a command

    def walk(group: click.Group, prefix: tuple[str, ...]) -> None:
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if isinstance(command, click.Group):
                walk(command, (*prefix, name))
            elif command is not None:
                found.append((*prefix, name))

    walk(cli, ())
    return found


def with_arguments(words: tuple[str, ...]) -> list[str]:
    """`words` and a placeholder for each required argument of the command they name."""
    ctx = click.Context(cli)
    command: click.Command | None = cli
    for word in words:
        assert isinstance(command, click.Group)
        command = command.get_command(ctx, word)
    assert command is not None
    needed = [p for p in command.params if isinstance(p, click.Argument) and p.required]
    return [*words, *("x" for _ in needed)]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    env["NO_COLOR"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "overbrainer", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_table_names_every_code_the_program_has() -> None:
    codes = {int(code) for code in re.findall(r"^\| `(\d+)` \|", DOC.read_text(), re.M)}
    constants = {getattr(errors, name) for name in dir(errors) if name.startswith("EXIT_")}
    assert codes == constants == {0, 1, 2, 130}


# --- 0 ---


async def test_0_when_the_work_is_done(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 2)
    async with open_stub(lambda _: Reply(content="An answer.", reasoning="r")) as stub:
        done = await overbrainer(root, "answers", url=stub.url)
    assert done.code == 0, done.stderr
    history = run("-C", str(root), "history", cwd=tmp_path)
    assert history.returncode == 0


# --- 1 ---


async def test_1_when_a_stage_finished_with_failed_items(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 3)

    def reply(request: Recorded) -> Reply:
        if "1" in (request.prompt or ""):
            return Reply(status=500, content="boom")
        return Reply(content="An answer.", reasoning="r")

    async with open_stub(reply) as stub:
        done = await overbrainer(root, "answers", url=stub.url)
        stub.violations.clear()
    assert done.code == 1, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "error: 1 answers item(s) failed; run the command again to retry them"
    )


async def test_1_when_the_provider_refuses_every_request(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 2)
    async with open_stub(lambda _: Reply(status=401, content="bad key")) as stub:
        done = await overbrainer(root, "answers", url=stub.url)
        stub.violations.clear()
    assert done.code == 1, done.stderr
    assert "authentication failed" in done.stderr.strip().splitlines()[-1]


async def test_1_when_the_spend_cap_stops_the_work(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    write_questions(root, 5)
    reply = Reply(content="An answer.", reasoning="r", usage=(30, 60))
    async with open_stub(lambda _: reply) as stub:
        stub.models = PRICES
        env = {"OVERBRAINER_ROLES__PARENT__MAX_TOKENS": "100"}
        done = await overbrainer(root, "answers", "--max-cost", "0.8", url=stub.url, env=env)
    assert done.code == 1, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("error: spend cap reached")


def test_1_when_a_training_job_fails(tmp_path: Path) -> None:
    project = make_training_project(tmp_path / "p")
    env = standin_env(tmp_path / "bin", STANDIN_EXIT="3")
    done = train_command(project, env, "train", timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("error: ")


# --- 2 ---


@pytest.mark.parametrize("words", leaf_commands(), ids=" ".join)
def test_2_for_an_unknown_option_on_every_command(tmp_path: Path, words: tuple[str, ...]) -> None:
    done = run(*with_arguments(words), "--no-such-option", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("error: No such option") and "--no-such-option" in line
    assert done.stdout == ""


PROJECTLESS = {("init",), ("system",), ("skill", "install"), ("tui",), ("push",)}
"""Commands that need no project (`push` refuses its missing RUN_ID first)."""


@pytest.mark.parametrize(
    "words", [w for w in leaf_commands() if w not in PROJECTLESS], ids=" ".join
)
def test_2_without_a_project_on_every_command_that_needs_one(
    tmp_path: Path, words: tuple[str, ...]
) -> None:
    done = run("-C", str(tmp_path / "none"), *with_arguments(words), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: cannot read {tmp_path / 'none' / 'overbrainer.toml'}")


def test_2_for_a_bad_setting_named_by_its_key(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    config = root / "overbrainer.toml"
    config.write_text(config.read_text().replace("max_retries = 2", 'max_retries = "two"'))
    done = run("-C", str(root), "split", cwd=tmp_path)
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert "max_retries" in line


def test_2_for_an_unknown_run(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    done = run("-C", str(root), "runs", "logs", "nope", cwd=tmp_path)
    assert done.returncode == 2
    assert "nope" in done.stderr.strip().splitlines()[-1]


async def test_2_when_the_work_is_refused_before_any_spending(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 2)
    async with open_stub(lambda _: Reply(content="An answer.", reasoning="r")) as stub:
        # A cap with prices the provider does not list: refused before any request.
        done = await overbrainer(root, "answers", "--max-cost", "1", url=stub.url)
        assert stub.completions == []
    assert done.code == 2, done.stderr


# --- 130 ---


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
async def test_130_when_stopped_by_a_signal(tmp_path: Path, signum: signal.Signals) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    write_questions(root, 3)
    released = trio.Event()

    async def held(request: Recorded) -> Reply:
        await released.wait()
        return Reply(content="An answer.", reasoning="r")

    async with open_stub(held) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "answers", url=stub.url)
        await wait_until(lambda: len(stub.completions) == 1)
        process.send_signal(signum)
        await wait_until(lambda: "answers: stopping:" in (root / "stderr.txt").read_text())
        released.set()
        with trio.fail_after(30):
            code = await process.wait()
    assert code == 130
    last = (root / "stderr.txt").read_text().strip().splitlines()[-1]
    assert last == "interrupted: the stage resumes on its next run"
