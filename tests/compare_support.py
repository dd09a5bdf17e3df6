"""A project with a trained-and-exported run for the compare tests: a real GGUF, eval questions."""

from __future__ import annotations

import contextlib
import json
import re
import tarfile
from collections.abc import Iterator
from pathlib import Path

from overbrainer.compare.job import ANSWERS_FILE, compares_of, create_compare
from overbrainer.compare.plan import plan_compare
from overbrainer.devtools.stub_script import Json, Recorded, Reply
from overbrainer.export.record import BASE, ExportRecord, write_export_record
from overbrainer.targets.llama_cpp import resolve_pin
from overbrainer.training.run_store import RunRecord, Runs, RunState
from tests.gguf_support import write_tiny_llama
from tests.llama_support import LlamaRelease, served_directory, sha256_of

RUN_ID = "demo_20261007-092758"
GGUF = "output/gguf/tiny-Q8_0.gguf"
BASE_GGUF = "output/gguf/tiny-base-Q8_0.gguf"
QUESTIONS = 5

CONFIG = """\
[project]
name = "demo"

[providers.stub]
protocol = "openai"

[roles.generator]
provider = "stub"
model = "gen-model"

[roles.parent]
provider = "stub"
model = "parent-model"
{judge}
[pipeline]
concurrency = {concurrency}
max_retries = 1

[targets.local]
kind = "local"
runtime = "native"

[compare]
max_tokens = 8
server_start_secs = 60
parent_price_in = 1.1
parent_price_out = 2.2
child_price_per_hour = 0.5
{compare}
"""

JUDGE = """
[roles.judge]
provider = "stub"
model = "judge-model"
max_tokens = 256
"""


def make_compare_project(
    root: Path,
    *,
    judge: bool = True,
    concurrency: int = 4,
    compare: str = "",
    questions: int = QUESTIONS,
    bad_gguf: bool = False,
    target: str = "local",
    remote_dir: Path | None = None,
) -> Path:
    """A project whose run `RUN_ID` has an exported GGUF and whose data/eval.jsonl is written."""
    root.mkdir(parents=True, exist_ok=True)
    text = CONFIG.format(judge=JUDGE if judge else "", concurrency=concurrency, compare=compare)
    (root / "overbrainer.toml").write_text(text, encoding="utf-8")
    (root / ".overbrainer").mkdir(exist_ok=True)
    (root / ".overbrainer" / "version").write_text("1\n", encoding="utf-8")
    run_dir = root / "runs" / RUN_ID
    (run_dir / "output" / "gguf").mkdir(parents=True)
    record = RunRecord(
        id=RUN_ID,
        target=target,
        created="2026-10-07T09:27:58Z",
        remote_dir=str(run_dir.resolve() if remote_dir is None else remote_dir),
        job=None,
        state=RunState.SUCCEEDED,
    )
    (run_dir / "run.json").write_text(record.to_json(), encoding="utf-8")
    (run_dir / "axolotl.yaml").write_text(
        "base_model: tiny/random-llama\nsequence_len: 256\n", encoding="utf-8"
    )
    gguf = run_dir / GGUF
    if bad_gguf:
        gguf.write_bytes(b"GGUF" + b"\x00" * 64)
    else:
        write_tiny_llama(gguf)
    write_export_record(
        run_dir / "export.json",
        ExportRecord(
            "Q8_0", "b0test", GGUF, sha256_of(gguf), gguf.stat().st_size, "2026-10-07T10:00:00Z"
        ),
    )
    data = root / "data"
    data.mkdir()
    lines = []
    for n in range(questions):
        lines.append(
            json.dumps(
                {
                    "id": f"q{n}",
                    "topic": "rust",
                    "subtopic": "borrowing",
                    "messages": [
                        {"role": "user", "content": f"Question number {n}: why is the sky blue?"},
                        {"role": "assistant", "content": f"<think>hm</think>Parent answer {n}."},
                    ],
                    "meta": {
                        "model": "parent-model",
                        "input_tokens": 100 + n,
                        "output_tokens": 1000,
                        "finish_reason": "stop",
                        "reasoning_kind": "none",
                    },
                }
            )
        )
    (data / "eval.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def add_base_export(root: Path, seed: int = 7) -> Path:
    """Give `root`'s run a GGUF of its base model (another tiny random Llama) and the export
    record `overbrainer export RUN --base` writes for it; the GGUF's path."""
    run_dir = root / "runs" / RUN_ID
    gguf = run_dir / BASE_GGUF
    write_tiny_llama(gguf, seed=seed)
    record = ExportRecord(
        "Q8_0",
        "b0test",
        BASE_GGUF,
        sha256_of(gguf),
        gguf.stat().st_size,
        "2026-10-07T10:05:00Z",
        model=BASE,
    )
    folder = run_dir / "exports" / "export_20261007-100500"
    folder.mkdir(parents=True)
    write_export_record(folder / "export.json", record)
    return gguf


def is_base_request(request: Recorded) -> bool:
    """Whether a judge request is of the child against the base (the parent's answer is not in
    it)."""
    return "Parent answer" not in (request.prompt or "")


def compare_env(
    release: LlamaRelease, cache: Path, extra: dict[str, str] | None = None
) -> dict[str, str]:
    """The command's environment: the loopback release, a fresh tools cache, short polls."""
    env = {**release.env(), "OVERBRAINER_CACHE": str(cache), "OVERBRAINER_TEST_POLL_S": "0.2"}
    env.update(extra or {})
    return env


def question_number(request: Recorded) -> int:
    """Which eval question a judge request is about."""
    found = re.search(r"Question number (\d+)", request.prompt or "")
    assert found is not None, request.prompt
    return int(found.group(1))


SCRIPTED = {
    0: '{"verdict": "A", "reason": "A is right"}',
    1: '{"verdict": "B", "reason": "B is right"}',
    2: '{"verdict": "tie", "reason": "both fine"}',
    3: "I would rather not say.",
    4: 'Sure. {not json} Here: {"verdict": "a", "reason": "embedded"} done',
}


def scripted_judge(request: Recorded) -> Reply:
    """A: q0, B: q1, tie: q2, garbage: q3 (unparsed), JSON in prose: q4; others tie."""
    return Reply(SCRIPTED.get(question_number(request), SCRIPTED[2]), usage=(50, 10))


STANDIN_SERVER = '''#!/usr/bin/env python3
"""A stand-in llama-server: healthy, starts an answer, then dies (or hangs) mid-answer."""
import http.server, json, os, sys, time
port = int(sys.argv[sys.argv.index("--port") + 1])
with open("standin.pid", "w") as out:
    out.write(str(os.getpid()))
mode = os.environ.get("STANDIN_LLAMA_MODE", "@MODE@")

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'{"status":"ok"}')

    def do_POST(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        chunk = {"choices": [{"delta": {"content": "Hel"}, "finish_reason": None}]}
        self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\\n\\n")
        self.wfile.flush()
        print("standin: answering", flush=True)
        if mode == "hang":
            time.sleep(600)
        print("standin: GGML_ASSERT failed, dying", flush=True)
        os._exit(3)

    def log_message(self, *args):
        pass

print("standin: listening", flush=True)
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
'''
STANDIN_TAG = "b0standin"


@contextlib.contextmanager
def standin_release(directory: Path, mode: str = "die") -> Iterator[dict[str, str]]:
    """A loopback release whose `llama-server` is the stand-in (dying or hanging mid-answer
    unless `STANDIN_LLAMA_MODE` says otherwise); its pin variables."""
    binary = directory / "releases" / "download" / STANDIN_TAG
    binary.mkdir(parents=True)
    archive = binary / f"llama-{STANDIN_TAG}-bin-ubuntu-x64.tar.gz"
    script = directory / "llama-server"
    script.write_text(STANDIN_SERVER.replace("@MODE@", mode), encoding="utf-8")
    script.chmod(0o755)
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(script, arcname=f"llama-{STANDIN_TAG}/llama-server")
    with served_directory(directory) as url:
        yield {
            "OVERBRAINER_LLAMA_CPP": STANDIN_TAG,
            "OVERBRAINER_LLAMA_CPP_URL": url,
            "OVERBRAINER_LLAMA_CPP_UBUNTU_X64_SHA256": sha256_of(archive),
        }


JUDGE_PRICES: Json = {
    "data": [{"id": "judge-model", "pricing": {"prompt": "0.00001", "completion": "0.00002"}}]
}
"""The judge's listed price: $10 per million input tokens, $20 per million output tokens."""


def answered_compare(root: Path, seed: int = 42) -> str:
    """A compare of `root`'s run whose child has answered every question (no job run): its ID.

    What `--rejudge` needs: `setup.json`, the compare record and `child_answers.jsonl`.
    """
    runs = Runs(root / "runs")
    plan = plan_compare(runs, root / "data" / "eval.jsonl", None, None)
    setup = create_compare(runs, plan, resolve_pin({}), seed)
    folder = compares_of(runs.dir_of(setup.run)).dir_of(setup.compare)
    lines = [
        json.dumps(
            {
                "id": q.id,
                "answer": f"Child answer {n}.",
                "finish": "stop",
                "input_tokens": 20,
                "output_tokens": 5,
                "seconds": 0.5,
                "first_token_seconds": 0.1,
                "tokens_per_second": 12.5,
            }
        )
        for n, q in enumerate(setup.questions)
    ]
    (folder / ANSWERS_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return setup.compare
