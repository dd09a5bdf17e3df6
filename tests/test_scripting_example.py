"""docs/examples/nightly.py run as cron runs it, against the stand-ins, night after night.

The chain is real from end to end but for the trainer and the converter: the stand-in provider
(generator, parent and judge), the stand-in `axolotl` (its merge copies the base model), a
loopback llama.cpp release whose converter writes the tiny Llama GGUF of tests/gguf_support.py
(the real one needs torch) and whose `llama-quantize` and `llama-server` are the real tools, the
real compare, and the loopback fake Hub behind the real huggingface_hub.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_model import default_reply
from overbrainer.devtools.stub_script import Recorded, Reply
from tests.gguf_support import write_tiny_llama
from tests.hub_support import FakeHub, fake_hub, hub_env
from tests.llama_support import LlamaRelease, sha256_of
from tests.ports import free_port
from tests.train_helpers import kill_jobs, standin_env

pytestmark = pytest.mark.hub

SCRIPT = Path(__file__).resolve().parent.parent / "docs" / "examples" / "nightly.py"
TAG = "b0nightly"

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
    """A loopback release `TAG`: the stand-in converter and the real tools; its pin variables."""
    directory.mkdir(parents=True)
    gguf = directory / "tiny.gguf"
    write_tiny_llama(gguf)
    converter = directory / "convert_hf_to_gguf.py"
    converter.write_text(CONVERTER.format(gguf=str(gguf)), encoding="utf-8")
    source = directory / "archive" / "refs" / "tags" / f"{TAG}.tar.gz"
    source.parent.mkdir(parents=True)
    with tarfile.open(source, "w:gz") as tar:
        tar.add(converter, arcname=f"llama.cpp-{TAG}/convert_hf_to_gguf.py")
    binary = directory / "releases" / "download" / TAG / f"llama-{TAG}-bin-ubuntu-x64.tar.gz"
    binary.parent.mkdir(parents=True)
    real_binary = (
        real.directory / "releases" / "download" / real.tag
    ) / f"llama-{real.tag}-bin-ubuntu-x64.tar.gz"
    with tarfile.open(real_binary) as packed, tarfile.open(binary, "w:gz") as tar:
        for member in packed.getmembers():
            data = packed.extractfile(member)
            member.name = member.name.replace(f"llama-{real.tag}", f"llama-{TAG}", 1)
            tar.addfile(member, data)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=directory,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield {
            "OVERBRAINER_LLAMA_CPP": TAG,
            "OVERBRAINER_LLAMA_CPP_URL": f"http://127.0.0.1:{port}",
            "OVERBRAINER_LLAMA_CPP_SOURCE_SHA256": sha256_of(source),
            "OVERBRAINER_LLAMA_CPP_UBUNTU_X64_SHA256": sha256_of(binary),
        }
    finally:
        server.terminate()
        server.wait(timeout=10)


def fake_modules(folder: Path) -> Path:
    """Empty `torch`, `numpy` and `transformers` packages: the export job checks they import before it
    runs the converter, which here needs neither."""
    for name in ("torch", "numpy", "transformers"):
        (folder / name).mkdir(parents=True)
        (folder / name / "__init__.py").write_text("")
    return folder


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[FakeHub]:
    with fake_hub(tmp_path) as running:
        yield running


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
    tmp_path: Path, stub_url: str, release: dict[str, str], hub: FakeHub
) -> dict[str, str]:
    """The stand-in trainer first on PATH (then this venv's `overbrainer`), the stub, the
    release, the fake Hub, and a `python3` that finds the fake torch."""
    env = standin_env(tmp_path / "bin")
    env.update(hub_env(tmp_path, hub.url))
    env["PATH"] = standin_env(tmp_path / "bin")["PATH"]
    venv_bin = Path(sys.executable).parent
    env["PATH"] = f"{tmp_path / 'bin'}:{venv_bin}:{env['PATH']}"
    python3 = tmp_path / "bin" / "python3"
    modules = fake_modules(tmp_path / "fake-modules")
    python3.write_text(
        f'#!/bin/sh\nPYTHONPATH="{modules}${{PYTHONPATH:+:$PYTHONPATH}}" exec {sys.executable} "$@"\n'
    )
    python3.chmod(0o755)
    env.update(release)
    env["OVERBRAINER_CACHE"] = str(tmp_path / "cache")
    env["OVERBRAINER_PROVIDERS__STUB__BASE_URL"] = stub_url
    env["NO_COLOR"] = "1"
    return env


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


async def test_nightly_pushes_only_a_better_child_and_stops_on_a_bad_config(
    tmp_path: Path, release: dict[str, str], hub: FakeHub
) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text("{}")
    project = make_project(tmp_path / "project", base)
    judge = Judge()
    try:
        async with open_stub(judge) as stub:
            env = night_env(tmp_path, stub.url, release, hub)
            first = await nightly(project, env)
            out = first.stdout.decode()
            print(out)
            print(first.stderr.decode()[-6000:])
            assert first.returncode == 0
    finally:
        kill_jobs(project)
