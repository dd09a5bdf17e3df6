"""docs/examples/nightly.py run as cron runs it, against the stand-ins, night after night.

The chain is real from end to end but for the trainer and the converter: the stand-in provider
(generator, parent and judge), the stand-in `axolotl` (its merge copies the base model), a
loopback llama.cpp release whose converter writes the tiny Llama GGUF of tests/gguf_support.py
(the real one needs torch) and whose `llama-quantize` and `llama-server` are the real tools, the
real compare, and the loopback fake Hub behind the real huggingface_hub.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from overbrainer.devtools.stub_model import default_reply
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from tests.gguf_support import write_tiny_llama
from tests.hub_support import FakeHub, hub_env
from tests.llama_support import LlamaRelease, served_directory, sha256_of
from tests.pipeline_support import PRICES, wait_until
from tests.train_helpers import hold_at, kill_jobs, run_ids, standin_env, steps_logged

SCRIPT = Path(__file__).resolve().parent.parent / "docs" / "examples" / "nightly.py"

CONFIG = """\
[project]
name = "nightly"

[[topics]]
name = "ownership"
description = "Rust ownership and borrowing"
subtopics = {subtopics}
questions_per_subtopic = 2

[providers.stub]
protocol = "openai"

[roles.generator]
provider = "stub"
model = "gen-model"

[roles.parent]
provider = "stub"
model = "parent-model"

[roles.judge]
provider = "stub"
model = "judge-model"
max_tokens = 256

[pipeline]
concurrency = 4
eval_ratio = 0.5

[training]
target = "local"
base_model = "{base}"
adapter = "lora"
merge = true

[targets.local]
kind = "local"
runtime = "native"

[export]
quantize = "Q8_0"

[compare]
max_tokens = 8
server_start_secs = 60
child_price_per_hour = 0.5
"""

CONVERTER = """\
import shutil, sys
out = sys.argv[sys.argv.index("--outfile") + 1]
shutil.copyfile({gguf!r}, out)
print("stand-in converter: wrote", out)
"""


class Judge:
    """The stand-in judge: prefers the child (or the parent) in every comparison."""

    def __init__(self) -> None:
        self.prefers_child = True

    def __call__(self, request: Recorded) -> Reply:
        prompt = request.prompt or ""
        if "Answer A:" not in prompt:
            return default_reply(request)
        answer_a = prompt.split("Answer A:", 1)[1].split("Answer B:", 1)[0]
        parent_is_a = "Here is a careful answer" in answer_a
        pick_a = parent_is_a != self.prefers_child
        reply = {"verdict": "A" if pick_a else "B", "reason": "a stand-in's choice"}
        return Reply(json.dumps(reply), usage=(50, 10))


def release_env(directory: Path, real: LlamaRelease) -> Iterator[dict[str, str]]:
    """`real`'s release with the stand-in converter in its source archive; its pin variables."""
    directory.mkdir(parents=True)
    gguf = directory / "tiny.gguf"
    write_tiny_llama(gguf)
    converter = directory / "convert_hf_to_gguf.py"
    converter.write_text(CONVERTER.format(gguf=str(gguf)), encoding="utf-8")
    source = directory / "archive" / "refs" / "tags" / f"{real.tag}.tar.gz"
    source.parent.mkdir(parents=True)
    with tarfile.open(source, "w:gz") as tar:
        tar.add(converter, arcname=f"llama.cpp-{real.tag}/convert_hf_to_gguf.py")
    binary = Path("releases", "download", real.tag, f"llama-{real.tag}-bin-ubuntu-x64.tar.gz")
    (directory / binary).parent.mkdir(parents=True)
    (directory / binary).symlink_to(real.directory / binary)
    with served_directory(directory) as url:
        yield {
            **real.env(),
            "OVERBRAINER_LLAMA_CPP_URL": url,
            "OVERBRAINER_LLAMA_CPP_SOURCE_SHA256": sha256_of(source),
        }


def fake_modules(folder: Path) -> Path:
    """Empty `torch`, `numpy` and `transformers` packages: the export job checks that they
    import before it runs the converter, which here needs none of them."""
    for name in ("torch", "numpy", "transformers"):
        (folder / name).mkdir(parents=True)
        (folder / name / "__init__.py").write_text("")
    return folder


@pytest.fixture
def release(tmp_path: Path, llama_release: LlamaRelease) -> Iterator[dict[str, str]]:
    yield from release_env(tmp_path / "release", llama_release)


def make_project(root: Path, base: Path, subtopics: int = 2) -> Path:
    """The nightly project: one topic, every role on the stub, training on this machine."""
    root.mkdir(parents=True)
    (root / ".overbrainer").mkdir()
    (root / ".overbrainer" / "version").write_text("1\n")
    write_config(root, base, subtopics)
    return root


def write_config(root: Path, base: Path, subtopics: int) -> None:
    text = CONFIG.format(subtopics=subtopics, base=base)
    (root / "overbrainer.toml").write_text(text, encoding="utf-8")


def night_env(
    tmp_path: Path,
    stub_url: str,
    release: dict[str, str] | None = None,
    hub: FakeHub | None = None,
    knobs: dict[str, str] | None = None,
) -> dict[str, str]:
    """The stand-in trainer first on PATH (then this venv's `overbrainer`, as cron would find
    it), a `python3` that finds the fake torch, the stub, the release and the fake Hub."""
    bin_dir = tmp_path / "bin"
    env = standin_env(bin_dir, **(knobs or {}))
    if hub is not None:
        env.update({k: v for k, v in hub_env(tmp_path, hub.url).items() if k != "PATH"})
    env["PATH"] = f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    modules = fake_modules(tmp_path / "fake-modules")
    python3 = bin_dir / "python3"
    python3.write_text(
        f'#!/bin/sh\nPYTHONPATH="{modules}${{PYTHONPATH:+:$PYTHONPATH}}" '
        f'exec {sys.executable} "$@"\n'
    )
    python3.chmod(0o755)
    env.update(release or {})
    env["OVERBRAINER_CACHE"] = str(tmp_path / "cache")
    env["OVERBRAINER_PROVIDERS__STUB__BASE_URL"] = stub_url
    env["NO_COLOR"] = "1"
    return env


def base_model(tmp_path: Path) -> Path:
    """The base model the stand-in trainer "trains" (its merge copies it)."""
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text("{}")
    return base


async def nightly(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """`python docs/examples/nightly.py PROJECT` to its end."""
    with trio.fail_after(300):
        return await trio.run_process(
            [sys.executable, str(SCRIPT), str(project)],
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )


def lines(done: subprocess.CompletedProcess[bytes]) -> list[str]:
    """The script's summary lines (stdout)."""
    return done.stdout.decode().splitlines()


def commits(hub: FakeHub) -> int:
    """How many commits the fake Hub received."""
    return len(hub.calls("commit"))


async def test_nightly_pushes_only_a_better_child_and_stops_on_a_bad_config(
    tmp_path: Path, release: dict[str, str], hub: FakeHub
) -> None:
    base = base_model(tmp_path)
    project = make_project(tmp_path / "project", base)
    state = project / ".nightly.json"
    judge = Judge()
    try:
        async with open_stub(judge) as stub:
            stub.models = PRICES
            env = night_env(tmp_path, stub.url, release, hub)

            # Night 1: no best yet, the child is better than nothing, but the Hub refuses the
            # token: the night fails at its push step, and the child waits as `pending`.
            hub.control(status={"create": 403})
            first = await nightly(project, env)
            assert first.returncode == 1, first.stderr.decode()
            (run_1,) = run_ids(project)
            assert [line.split(":")[0] for line in lines(first)] == [
                "grow",
                "train",
                "export",
                "compare",
            ]
            assert lines(first)[0].startswith("grow: 7 new (subtopics 1, questions 2, answers 4); ")
            assert lines(first)[1] == f"train: run {run_1} succeeded"
            assert lines(first)[2].startswith(f"export: runs/{run_1}/output/gguf/{run_1}-Q8_0.gguf")
            assert (
                "win-or-tie 1.000 (2 wins, 0 ties, 0 losses); best so far none" in (lines(first)[3])
            )
            assert first.stderr.decode().splitlines()[-1] == (
                "nightly: push failed: the Hugging Face token needs write access to alice: "
                "set OVERBRAINER_HF_TOKEN to a token that has it"
            )
            assert json.loads(state.read_text())["pending"]["run_id"] == run_1
            assert commits(hub) == 0

            # Night 2: the Hub takes it; the pending child is pushed first, and since the
            # dataset did not change, nothing is trained.
            hub.control(status={})
            second = await nightly(project, env)
            assert second.returncode == 0, second.stderr.decode()
            best = json.loads(state.read_text())["best"]
            assert (best["run_id"], best["win_or_tie"]) == (run_1, 1.0)
            assert lines(second)[0] == f"push: run {run_1} beat the best: pushing it again"
            assert lines(second)[1] == f"push: {best['url']}"
            assert lines(second)[2].startswith("grow: 0 new (subtopics 0, questions 0, answers 0)")
            assert lines(second)[3] == (
                "train: skipped: the dataset did not change since the last compare"
            )
            assert "pending" not in json.loads(state.read_text())
            assert run_ids(project) == [run_1]
            assert commits(hub) == 1

            # Night 3: the dataset grew, but the new child loses to the parent: no push.
            write_config(project, base, subtopics=3)
            judge.prefers_child = False
            third = await nightly(project, env)
            assert third.returncode == 0, third.stderr.decode()
            run_2 = run_ids(project)[-1]
            assert run_ids(project) == [run_1, run_2]
            assert lines(third)[0].startswith("grow: 4 new (subtopics 1, questions 1, answers 2)")
            assert "win-or-tie 0.000 (0 wins, 0 ties, 3 losses); " in lines(third)[3]
            assert f"best so far 1.000 (run {run_1})" in lines(third)[3]
            assert lines(third)[4] == f"push: skipped: run {run_2} does not beat the best"
            assert commits(hub) == 1
            assert json.loads(state.read_text())["best"] == best

            # Night 4: a broken overbrainer.toml stops the night at its first step, exit 2.
            (project / "overbrainer.toml").write_text("[project\n")
            fourth = await nightly(project, env)
            assert fourth.returncode == 2
            assert lines(fourth) == []
            last = fourth.stderr.decode().splitlines()[-1]
            assert last.startswith("nightly: grow: configuration problem: ")
            assert "overbrainer.toml" in last
            assert run_ids(project) == [run_1, run_2]
            assert commits(hub) == 1
    finally:
        kill_jobs(project)


def held(project: Path) -> bool:
    """Whether the project's only run has logged step 3 (where `hold_at` holds it)."""
    ids = run_ids(project)
    return len(ids) == 1 and steps_logged(project, ids[0]) >= 3


async def test_ctrl_c_during_training_stops_the_night_quietly_with_130(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", base_model(tmp_path))
    out, err = tmp_path / "night.out", tmp_path / "night.err"
    try:
        async with open_stub(Judge()) as stub:
            env = night_env(tmp_path, stub.url, knobs=hold_at(tmp_path, 3))
            with out.open("wb") as stdout, err.open("wb") as stderr:
                night = await trio.lowlevel.open_process(
                    [sys.executable, str(SCRIPT), str(project)],
                    env=env,
                    stdout=stdout,
                    stderr=stderr,
                )
            try:
                # The job holds at step 3 until released: it is training when Ctrl-C comes.
                await wait_until(lambda: night.poll() is not None or held(project))
                assert night.poll() is None, err.read_text()
                night.send_signal(signal.SIGINT)
                with trio.fail_after(60):
                    code = await night.wait()
            finally:
                night.kill()
                await night.wait()
        assert code == 130
        assert out.read_text().splitlines()[0].startswith("grow: ")
        assert len(out.read_text().splitlines()) == 1
        (run_id,) = run_ids(project)
        errors = err.read_text().splitlines()
        # overbrainer's own line is the last: the night adds none of its own.
        assert errors[-1] == (
            f"interrupted: run {run_id} keeps running on target `local`; "
            f"follow it again with `overbrainer train attach {run_id}`"
        )
        assert not (project / ".nightly.json").exists()
    finally:
        kill_jobs(project)
