"""Compare figures: judging throughput, and what the child client's own measuring costs.

1. Judging: 400 questions judged at concurrency 8 by the real judge code (two answers, the
   template, the reply parser, one verdict line appended and one `Judged` event each) against
   the stand-in provider in its own process, answering a verdict after 50 ms. Verdicts/s and
   this process's CPU per verdict.
2. Client overhead: the same streamed answer of a tiny random Llama (written by
   `tests/gguf_support.py`) from the real `llama-server` of `.ci/llama-cpp-tools.sh`, asked 50
   times by `compare_client.py`'s `ask` and 50 times by a plain `curl -N`; median latencies.
   Skipped when the tools are not built.
"""

from __future__ import annotations

import importlib.util
import json
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

import trio

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from overbrainer.compare.answers import ChildAnswer  # noqa: E402
from overbrainer.compare.judge import Judge, Judging, judge_all  # noqa: E402
from overbrainer.compare.judge_cost import JudgeSpend  # noqa: E402
from overbrainer.compare.questions import ChatMessage, EvalQuestion  # noqa: E402
from overbrainer.compare.setup import CompareSetup  # noqa: E402
from overbrainer.config.settings import Role  # noqa: E402
from overbrainer.events.bus import open_event_bus  # noqa: E402
from overbrainer.llm.client import ProviderConnection, open_client  # noqa: E402
from overbrainer.llm.types import Protocol  # noqa: E402
from overbrainer.project.templates import default_text, parse_template  # noqa: E402
from tests.ports import free_port  # noqa: E402

QUESTIONS = 400
CONCURRENCY = 8
DELAY = 0.05
ASKS = 50
TOOLS = Path.home() / ".cache" / "overbrainer" / "ci-tools" / "llama-cpp-python-0.3.36" / "bin"

STUB = """
import sys, trio
from overbrainer.devtools.stub_provider import StubProvider
from overbrainer.devtools.stub_script import Reply
async def main():
    stub = StubProvider(lambda r: Reply('{"verdict": "A", "reason": "r"}'), delay=%s)
    async with trio.open_nursery() as nursery:
        url = await nursery.start(stub.serve, "127.0.0.1", int(sys.argv[1]))
        print(url, flush=True)
trio.run(main)
"""


def _wait(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def judging(folder: Path, url: str) -> None:
    questions = tuple(
        EvalQuestion(
            f"q{n}", "t", (ChatMessage("user", f"Question {n}?"),), "Parent answer " * 20, 10, 100
        )
        for n in range(QUESTIONS)
    )
    setup = CompareSetup(
        "run", "compare_bench", "m.gguf", "0" * 64, "Q4_K_M", "b0", None, 42, "", questions
    )
    answers = [
        ChildAnswer(q.id, "Child answer " * 20, "stop", 10, 50, 1.0, 0.1, 50.0) for q in questions
    ]
    template = parse_template("judge.txt", default_text("judge.txt"))
    connection = ProviderConnection(Protocol.OPENAI, url, max_connections=64)
    async with open_client(connection, "judge-model") as client:
        judge = Judge("stub", Role("stub", "judge-model"), client, template, "", False)
        async with open_event_bus() as bus:
            start, cpu = time.perf_counter(), _cpu()
            judging = Judging(judge, JudgeSpend(), bus, CONCURRENCY, both_orders=False)
            verdicts = await judge_all(judging, setup, answers, folder / "verdicts.jsonl")
            wall, used = time.perf_counter() - start, _cpu() - cpu
    assert verdicts is not None and len(verdicts) == QUESTIONS
    ideal = QUESTIONS / CONCURRENCY * DELAY
    print(
        f"judging: {QUESTIONS} verdicts at concurrency {CONCURRENCY}: {wall:.2f} s "
        f"(ideal {ideal:.2f} s), {QUESTIONS / wall:.1f} verdicts/s, "
        f"{used / QUESTIONS * 1000:.2f} ms CPU per verdict"
    )


def _client_module() -> ModuleType:
    path = REPO / "overbrainer" / "compare" / "scripts" / "compare_client.py"
    spec = importlib.util.spec_from_file_location("compare_client", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def client_overhead(folder: Path) -> None:
    server = TOOLS / "llama-server"
    if not server.exists() or shutil.which("curl") is None:
        print("client overhead: skipped (no llama-server built, or no curl)")
        return
    from tests.gguf_support import write_tiny_llama

    model = folder / "tiny.gguf"
    write_tiny_llama(model)
    port = free_port()
    process = subprocess.Popen(
        [str(server), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-np", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(port)
        time.sleep(1)
        client = _client_module()
        messages = [{"role": "user", "content": "Why is the sky blue?"}]
        ours = [client.ask(port, messages, 32, 0.0)["seconds"] for _ in range(ASKS)]
        body = json.dumps(
            {"messages": messages, "max_tokens": 32, "temperature": 0.0, "stream": True,
             "stream_options": {"include_usage": True}}
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        plain = [
            float(
                subprocess.run(
                    ["curl", "-sN", "-o", "/dev/null", "-w", "%{time_total}", url, "-d", body],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
            for _ in range(ASKS)
        ]
        print(
            f"client overhead: median latency {statistics.median(ours) * 1000:.2f} ms measured by "
            f"compare_client.py, {statistics.median(plain) * 1000:.2f} ms by curl's own "
            f"time_total, over {ASKS} answers of 32 tokens each"
        )
    finally:
        process.terminate()
        process.wait(timeout=10)


def main() -> None:
    port = free_port()
    stub = subprocess.Popen(
        [sys.executable, "-c", STUB % DELAY, str(port)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert stub.stdout is not None
        url = stub.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as tmp:
            trio.run(judging, Path(tmp), url)
            client_overhead(Path(tmp))
    finally:
        stub.terminate()
        stub.wait(timeout=10)


if __name__ == "__main__":
    main()
