"""Developer sessions: tests, lint, typecheck, bench, trainer."""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite (the real-Trainer test runs in its own session)."""
    session.install("-e", ".[test]")
    session.run("pytest", "-m", "not trainer", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff, with the ASYNC rules, and the layer contract (import-linter)."""
    session.install("-e", ".", "ruff", "import-linter")
    session.run("ruff", "check", "overbrainer", "tests", "bench", "noxfile.py")
    session.run("ruff", "format", "--check", "overbrainer", "tests", "bench", "noxfile.py")
    session.run("lint-imports")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the package, tests and benchmarks."""
    session.install("-e", ".[dev]")
    session.run("mypy")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: each prints its figures (record them in bench/README.md)."""
    session.install("-e", ".[test]")
    for script in sorted(Path("bench").glob("*.py")):
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
