"""Developer sessions: tests, quick, durations, under_load, lint, typecheck, bench, trainer, gguf,
realserver, ray, hub_lowest, hub_newest, axolotl."""

from __future__ import annotations

import configparser
import re
import subprocess
from pathlib import Path

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.reuse_existing_virtualenvs = True


SUITE = "not trainer and not gguf and not axolotl and not realserver and not ray"
"""The README's suite: the torch, Axolotl, real-server and Ray tests run in their own sessions."""


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite, in parallel (pytest-xdist; the torch, Axolotl and real-server tests run in
    their own sessions)."""
    session.install("-e", ".[test]")
    session.run("pytest", "-m", SUITE, *session.posargs)


@nox.session
def quick(session: nox.Session) -> None:
    """The inner tier: every test that took under a second in the recorded run
    (tests/durations.json) and the end-to-end paths marked `quick`; under 3 minutes."""
    session.install("-e", ".[test]")
    session.run("pytest", "-m", f"not slow and {SUITE}", *session.posargs)


@nox.session
def durations(session: nox.Session) -> None:
    """Run the suite and record each test's wall time in tests/durations.json (the quick tier's
    source); commit the file when tests were added or got slower."""
    session.install("-e", ".[test]")
    session.run("pytest", "-m", SUITE, "--record-durations", *session.posargs)


@nox.session
def under_load(session: nox.Session) -> None:
    """The suite 3 times in a row beside two CPU hogs (`stress-ng --cpu 2`, Debian's package):
    a test that needs an idle machine fails here. `nox -s under_load -- -x` passes on args."""
    session.install("-e", ".[test]")
    hogs = subprocess.Popen(["stress-ng", "--cpu", "2", "--quiet"])
    try:
        for round_ in (1, 2, 3):
            session.log(f"round {round_} of 3, beside stress-ng --cpu 2")
            session.run("pytest", "-m", SUITE, "-p", "no:cacheprovider", *session.posargs)
    finally:
        hogs.terminate()
        hogs.wait()


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff, with the ASYNC rules, and the layer contract (import-linter)."""
    session.install("-e", ".", "ruff", "import-linter")
    session.run("ruff", "check", "overbrainer", "tests", "bench", "docs/examples", "noxfile.py")
    session.run(
        "ruff", "format", "--check", "overbrainer", "tests", "bench", "docs/examples", "noxfile.py"
    )
    session.run("lint-imports")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the package, tests and benchmarks."""
    session.install("-e", ".[dev]")
    session.run("mypy")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: each prints its figures (record them in bench/README.md).

    `bench/_*.py` are helpers the benchmarks run, not benchmarks.
    """
    session.install("-e", ".[test]")
    for script in sorted(Path("bench").glob("[!_]*.py")):
        session.run("python", str(script))


@nox.session
def trainer(session: nox.Session) -> None:
    """The metrics plugin against the real transformers Trainer on a tiny CPU model."""
    session.install("-e", ".[test]")
    session.install("torch==2.13.0", "transformers", "accelerate")
    session.run("pytest", "-m", "trainer", *session.posargs)


@nox.session
def gguf(session: nox.Session) -> None:
    """`overbrainer export` of a tiny model with the real llama.cpp tools (built once, cached)."""
    session.install("-e", ".[test]")
    session.install("torch==2.13.0", "transformers", "accelerate", "sentencepiece", "gguf")
    session.run("pytest", "-m", "gguf", *session.posargs)


@nox.session
def realserver(session: nox.Session) -> None:
    """The pipeline against LiteLLM's proxy and llama-server (both built once, cached)."""
    session.install("-e", ".[test]")
    session.run("pytest", "-m", "realserver", *session.posargs)


@nox.session
def ray(session: nox.Session) -> None:
    """The `ray` target against a real multi-node Ray cluster (its venv built once, cached)."""
    session.install("-e", ".[test]")
    venv = session.run("bash", ".ci/ray-venv.sh", silent=True, external=True)
    assert isinstance(venv, str)
    ray_bin = f"{venv.strip().splitlines()[-1]}/bin/ray"
    session.run("pytest", "-m", "ray", *session.posargs, env={"OVERBRAINER_RAY": ray_bin})


def hub_requirement() -> str:
    """The `huggingface_hub` line of setup.cfg's install_requires (its range, one source)."""
    parser = configparser.ConfigParser()
    parser.read("setup.cfg")
    for line in parser["options"]["install_requires"].split("\n"):
        if line.strip().startswith("huggingface_hub"):
            return line.strip()
    raise RuntimeError("setup.cfg requires no huggingface_hub")


def hub_tests(session: nox.Session, *requirement: str) -> None:
    """The tests that push through the real library (`-m hub`), on the release installed."""
    session.install("-e", ".[test]")
    session.install(*requirement)
    version = "import huggingface_hub as h; print('huggingface_hub', h.__version__)"
    session.run("python", "-c", version)
    session.run("pytest", "-m", "hub", *session.posargs)


@nox.session
def hub_lowest(session: nox.Session) -> None:
    """The Hub tests on the lowest huggingface_hub setup.cfg allows (1.x: httpx underneath)."""
    floor = re.search(r">=\s*([^,\s]+)", hub_requirement())
    if floor is None:
        raise RuntimeError("setup.cfg gives huggingface_hub no lower bound")
    hub_tests(session, f"huggingface_hub=={floor.group(1)}")


@nox.session
def hub_newest(session: nox.Session) -> None:
    """The Hub tests on the newest huggingface_hub setup.cfg allows (2.x: httpx2 underneath)."""
    hub_tests(session, "--upgrade", hub_requirement())


@nox.session
def axolotl(session: nox.Session) -> None:
    """The real Axolotl (CPU, its own cached venv) through `overbrainer train`, then export,
    compare and push of the trained child with the real llama.cpp tools."""
    session.install("-e", ".[test]")
    session.run("pytest", "-m", "axolotl", *session.posargs)
