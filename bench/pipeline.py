"""Benchmark `overbrainer answers` against the stub provider in another process.

1. Side by side at several (answers, concurrency) cases, 200 ms per reply: `overbrainer
   answers`, a bare httpx2 loop sending the same chat requests and, when a venv with
   `bespokelabs-curator` is found (`--curator-python`), Curator: wall time as a fraction of
   the ideal ceil(N/C) x 200 ms, process CPU per answer, peak RSS (whole processes, start-up
   included, measured with `os.wait4`), and ours against the bare loop.
2. Resume cost: `answers` again on a finished project of 100,000 answers (zero requests).
3. `split` on those 100,000 answers.

Run: `python bench/pipeline.py [--cases 2000x64,10000x256,10000x1024] [--delay 0.2]
[--rounds 1] [--resume 100000] [--curator-python PATH]`. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import compileall
import functools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import httpx2
import trio

from overbrainer.model.finish import FinishReason, ReasoningKind
from overbrainer.storage.ids import question_id, subtopic_id
from overbrainer.storage.records import Example, Message, Meta, Question, Subtopic

CONFIG = """\
[project]
name = "bench"

[[topics]]
name = "ownership"
subtopics = {subtopics}
questions_per_subtopic = {per_subtopic}

[providers.stub]
protocol = "openai"

[roles.generator]
provider = "stub"
model = "gen-model"

[roles.parent]
provider = "stub"
model = "parent-model"
reasoning = true

[pipeline]
concurrency = {concurrency}
"""


@attrs.frozen
class Measured:
    """One finished process: wall seconds, CPU seconds (user + system), peak RSS in MiB."""

    wall: float
    cpu: float
    rss_mib: float
    stdout: str
    stub_cpu: float = 0.0
    """CPU seconds the stub it talked to spent (the stub shares the machine's cores)."""


def measure(args: list[str], env: dict[str, str] | None = None) -> Measured:
    """Run a command to its end and read its own resource usage."""
    begun = time.perf_counter()
    process = subprocess.Popen(
        args, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert process.stdout is not None
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - begun
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{args} exited with {process.returncode}")
    return Measured(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out)


def start_stub(delay: float) -> tuple[subprocess.Popen[str], str]:
    """`python -m overbrainer.devtools.stub_provider --delay D` and its base URL."""
    stub = subprocess.Popen(
        [sys.executable, "-m", "overbrainer.devtools.stub_provider", "--delay", str(delay)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert stub.stdout is not None
    return stub, stub.stdout.readline().strip()


def make_project(root: Path, count: int, concurrency: int) -> list[Question]:
    """A one-topic project with `count` questions (100 per subtopic)."""
    per_subtopic = 100
    subtopics = [
        Subtopic(subtopic_id("ownership", f"Part {n}"), "ownership", f"Part {n}")
        for n in range(math.ceil(count / per_subtopic))
    ]
    questions = []
    for n in range(count):
        sub = subtopics[n // per_subtopic]
        text = f"Question number {n}: how does {sub.name} work?"
        questions.append(Question(question_id(sub.id, text), "ownership", sub.id, sub.name, text))
    root.mkdir(parents=True)
    (root / "overbrainer.toml").write_text(
        CONFIG.format(subtopics=len(subtopics), per_subtopic=per_subtopic, concurrency=concurrency)
    )
    (root / ".overbrainer").mkdir()
    (root / ".overbrainer" / "version").write_text("1\n")
    (root / "data").mkdir()
    (root / "data" / "subtopics.jsonl").write_text("".join(s.to_json() + "\n" for s in subtopics))
    (root / "data" / "questions.jsonl").write_text("".join(q.to_json() + "\n" for q in questions))
    return questions


def write_answers(root: Path, questions: list[Question]) -> None:
    """A stored answer for every question, as `answers` would have written it."""
    lines = []
    for q in questions:
        messages = (
            Message("user", q.text),
            Message(
                "assistant",
                f"Here is a careful answer to: {q.text} " * 4,
                f"The user asks: {q.text} Let me reason about it step by step. " * 8,
            ),
        )
        meta = Meta("parent-model", 40, 600, FinishReason.STOP, ReasoningKind.RAW, None)
        lines.append(Example(q.id, q.topic, q.subtopic, messages, meta).to_json() + "\n")
    (root / "data" / "answers.jsonl").write_text("".join(lines))


def overbrainer_env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    env["OVERBRAINER_PROVIDERS__STUB__BASE_URL"] = url
    return env


async def bare_loop(url: str, texts: list[str], concurrency: int) -> None:
    """The floor: the same chat requests with a bare httpx2 client, `concurrency` at once."""
    slots = trio.Semaphore(concurrency)
    async with httpx2.AsyncClient(
        timeout=600, limits=httpx2.Limits(max_connections=None, max_keepalive_connections=1024)
    ) as client:

        async def one(text: str) -> None:
            try:
                body = {
                    "model": "parent-model",
                    "messages": [
                        {"role": "system", "content": "You are an expert in ownership."},
                        {"role": "user", "content": text},
                    ],
                    "max_tokens": 16384,
                    "reasoning": {"effort": "medium"},
                }
                response = await client.post(f"{url}/chat/completions", json=body)
                json.loads(response.content)
            finally:
                slots.release()

        async with trio.open_nursery() as nursery:
            for text in texts:
                await slots.acquire()
                nursery.start_soon(one, text)


def curator_python() -> Path:
    """The Python of a venv with `bespokelabs-curator` (kept apart: it pins its own packages).

    `OVERBRAINER_BENCH_CURATOR` if set, else the venv `bench/adaptive.py` makes, else
    `/tmp/curator-venv`.
    """
    named = os.environ.get("OVERBRAINER_BENCH_CURATOR")
    if named:
        return Path(named)
    made = Path(__file__).resolve().parent / ".venv-curator" / "bin" / "python"
    return made if made.exists() else Path("/tmp/curator-venv/bin/python")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="2000x64,10000x256,10000x1024", help="NxC,...")
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--resume", type=int, default=100_000, help="0: no resume and split")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of every case")
    parser.add_argument("--curator-python", type=Path, default=curator_python())
    parser.add_argument("--bare", nargs=3, metavar=("URL", "QUESTIONS", "CONCURRENCY"))
    parser.add_argument("--make-finished", nargs=2, metavar=("DIR", "COUNT"))
    args = parser.parse_args()
    if args.make_finished:
        root, count = Path(args.make_finished[0]), int(args.make_finished[1])
        write_answers(root, make_project(root, count, 64))
        return
    if args.bare:
        url, path, concurrency = args.bare
        texts = [Question.from_json(line).text for line in Path(path).read_text().splitlines()]
        trio.run(bare_loop, url, texts, int(concurrency))
        return

    curator: Path | None = args.curator_python
    if curator is not None and not curator.exists():
        print(
            f"Curator left out: no {curator} (make a venv with `pip install "
            "bespokelabs-curator==0.1.31` there, or set OVERBRAINER_BENCH_CURATOR)"
        )
        curator = None
    compile_bytecode()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    cases = [tuple(int(x) for x in case.split("x")) for case in args.cases.split(",")]
    ours_cpu: dict[int, list[float]] = {}
    ratios: dict[tuple[int, ...], list[float]] = {}
    for round_ in range(args.rounds):
        for n, c in cases:
            with tempfile.TemporaryDirectory() as tmp:
                rows = run_answers(Path(tmp), n, c, args.delay, curator, turn=round_)
            ours_cpu.setdefault(c, []).append(rows["overbrainer answers"].cpu / n)
            ratio = rows["overbrainer answers"].cpu / rows["bare httpx2 loop"].cpu
            ratios.setdefault((n, c), []).append(ratio)
    for (n, c), each in ratios.items():
        print(
            f"CPU ours/bare at N={n} C={c} over {len(each)} rounds: min {min(each):.2f}, "
            f"median {statistics.median(each):.2f}, max {max(each):.2f}"
        )
    if len(ours_cpu) > 1:
        lowest, highest = min(ours_cpu), max(ours_cpu)
        growth = min(ours_cpu[highest]) / min(ours_cpu[lowest])
        print(f"ours: CPU per answer at C={highest} is {growth:.2f}x that at C={lowest} (best)")
    print(f"load average {os.getloadavg()[0]:.2f}")

    if args.resume:
        quiet, quiet_url = start_stub(0.0)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                run_resume(Path(tmp), quiet_url, args.resume)
        finally:
            quiet.terminate()
            quiet.wait()


def compile_bytecode() -> None:
    """Write the package's bytecode first, as installing it does: where
    PYTHONDONTWRITEBYTECODE is set (it is on the project's machine), a checkout's modules are
    otherwise compiled from source in every process, which costs ours ~0.1 s a run (the bare
    loop imports few of them) and is not what a user's installed command pays."""
    package = Path(__file__).resolve().parent.parent / "overbrainer"
    compileall.compile_dir(package, quiet=1)


Environ = Callable[[str], dict[str, str]]
"""A command's environment given the stub's URL."""


def with_stub(delay: float, args: list[str], env: Environ | None = None) -> Measured:
    """Measure a command against a fresh stub (the stub keeps every request it served, so a
    used one grows slower and would handicap whichever command comes second)."""
    stub, url = start_stub(delay)
    try:
        command = [a.replace("{url}", url) for a in args]
        measured = measure(command, None if env is None else env(url))
    finally:
        stub.terminate()
        _, status, usage = os.wait4(stub.pid, 0)
        stub.returncode = os.waitstatus_to_exitcode(status)
    return attrs.evolve(measured, stub_cpu=usage.ru_utime + usage.ru_stime)


def curator_env(tmp: Path) -> dict[str, str]:
    """Curator without telemetry, cache reuse or a live display, its files under `tmp`."""
    return {
        **os.environ,
        "TELEMETRY_ENABLED": "false",
        "CURATOR_DISABLE_CACHE": "1",
        "CURATOR_CACHE_DIR": str(tmp / "curator-cache"),
        "CURATOR_DISABLE_RICH_DISPLAY": "1",
    }


def run_answers(
    tmp: Path, n: int, c: int, delay: float, curator: Path | None, *, turn: int
) -> dict[str, Measured]:
    """Each contender once on the same questions, the order turning with `turn`."""
    ideal = math.ceil(n / c) * delay
    root = tmp / "answers"
    make_project(root, n, c)
    questions_file = str(root / "data" / "questions.jsonl")
    here = Path(__file__).parent
    contenders: dict[str, tuple[list[str], Environ | None]] = {
        "bare httpx2 loop": (
            [sys.executable, __file__, "--bare", "{url}", questions_file, str(c)],
            None,
        ),
        "overbrainer answers": (
            [sys.executable, "-m", "overbrainer", "-C", str(root), "answers"],
            overbrainer_env,
        ),
    }
    if curator is not None:
        command = [str(curator), str(here / "_curator_answers.py"), "{url}", questions_file, str(c)]
        contenders["curator"] = (command, lambda _: curator_env(tmp))
    names = list(contenders)
    shift = turn % len(names)
    measured: dict[str, Measured] = {}
    for name in names[shift:] + names[:shift]:
        command, env = contenders[name]
        measured[name] = with_stub(delay, command, env)
    print(f"answers: {n} at concurrency {c}, {delay * 1000:.0f} ms per reply; ideal {ideal:.2f}s")
    print(f"  overbrainer says: {measured['overbrainer answers'].stdout.strip()}")
    for name in names:
        m = measured[name]
        print(
            f"  {name:<20} wall {m.wall:6.2f}s  ideal/wall {ideal / m.wall:.2f}  "
            f"CPU {m.cpu:6.2f}s = {m.cpu / n * 1000:.2f} ms/answer  peak RSS {m.rss_mib:.0f} MiB  "
            f"(stub CPU {m.stub_cpu:.1f}s)"
        )
    ours, floor = measured["overbrainer answers"], measured["bare httpx2 loop"]
    print(
        f"  ours/bare wall {ours.wall / floor.wall:.2f}; CPU ours/bare {ours.cpu / floor.cpu:.2f}, "
        f"beyond the bare loop {(ours.cpu - floor.cpu) / n * 1000:+.2f} ms/answer"
    )
    if "curator" in measured:
        other = measured["curator"]
        print(
            f"  ours/curator wall {ours.wall / other.wall:.2f}, "
            f"CPU {ours.cpu / other.cpu:.2f} (curator says: {other.stdout.strip()})"
        )
    return measured


def run_resume(tmp: Path, url: str, count: int) -> None:
    root = tmp / "resume"
    # Made by another process: a child forked from a big parent would report its memory.
    subprocess.run([sys.executable, __file__, "--make-finished", str(root), str(count)], check=True)
    size = (root / "data" / "answers.jsonl").stat().st_size
    command = functools.partial(measure, env=overbrainer_env(url))
    resume = command([sys.executable, "-m", "overbrainer", "-C", str(root), "answers"])
    print(f"resume: answers on a finished project of {count} answers ({size / 1e6:.0f} MB)")
    print(f"  overbrainer says: {resume.stdout.strip()}")
    print(f"  wall {resume.wall:.2f}s  CPU {resume.cpu:.2f}s  peak RSS {resume.rss_mib:.0f} MiB")
    split = command([sys.executable, "-m", "overbrainer", "-C", str(root), "split"])
    print(f"split: {count} answers")
    print(f"  overbrainer says: {split.stdout.strip()}")
    print(f"  wall {split.wall:.2f}s  CPU {split.cpu:.2f}s  peak RSS {split.rss_mib:.0f} MiB")


if __name__ == "__main__":
    main()
