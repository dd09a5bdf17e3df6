"""Benchmark adaptive concurrency against a rate-limited stand-in provider, beside the floor.

The stand-in (`python -m overbrainer.devtools.stub_provider --rate-limit N/SECONDS`, in its own
process) allows N requests per window, answers in `--delay` seconds, sends OpenAI's
`x-ratelimit-*` headers and a 429 with `Retry-After` over budget. `overbrainer answers` runs on
`--answers` questions at `concurrency = 64`, adaptive (the default) then fixed
(`adaptive = false`). Printed: wall time, the budget's floor (answers / rate), their ratio, and
the 429s. A scaled minute: 1,200 requests per 6 s is 200 requests/s.

With `--curator`, Curator 0.1.31 (bespokelabs-curator, its OpenAI online processor with its
defaults) answers the same number of prompts against a fresh stand-in with the same budget,
in a virtual environment of its own (`bench/.venv-curator`, made on first use). Curator reads
`x-ratelimit-limit-requests` as a per-minute figure, so use a 60 s window with it (e.g.
`--rate 1200/60`). Its tokenizer download (tiktoken's `cl100k_base`) cannot be fetched here:
the driver gives tiktoken a local byte-level encoding instead, which only changes Curator's
token estimates (the stand-in sets no token budget).

Run: `python bench/adaptive.py [--answers 2000] [--rate 1200/6] [--delay 0.2] [--curator]`.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# bench/ is the script's directory, so its sibling is importable as run by `nox -s bench`.
from pipeline import make_project, overbrainer_env

CURATOR = "bespokelabs-curator==0.1.31"
CURATOR_VENV = Path(__file__).resolve().parent / ".venv-curator"
CURATOR_DRIVER = """
import json, os, sys, time
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TELEMETRY_ENABLED", "false")
import tiktoken
local = tiktoken.Encoding(
    name="local-bytes",
    pat_str=r"\\S+|\\s+",
    mergeable_ranks={bytes([i]): i for i in range(256)},
    special_tokens={"<|endoftext|>": 256},
)
tiktoken.get_encoding = lambda name: local
tiktoken.encoding_for_model = lambda name: local
from bespokelabs import curator
url, count = sys.argv[1], int(sys.argv[2])
class Ask(curator.LLM):
    def prompt(self, row):
        return row["q"]
    def parse(self, row, response):
        return {"q": row["q"], "a": response}
llm = Ask(
    model_name="gpt-4o-mini",
    backend="openai",
    backend_params={"base_url": url, "api_key": "sk-bench", "max_retries": 50},
)
rows = [{"q": f"Question number {n}: how does ownership work?"} for n in range(count)]
begun = time.perf_counter()
out = llm(rows)
print(json.dumps({"wall": time.perf_counter() - begun, "rows": len(out.dataset)}))
"""


def start_stand_in(args: argparse.Namespace) -> tuple[subprocess.Popen[str], str]:
    """The rate-limited stand-in in its own process, and its base URL."""
    stub = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "overbrainer.devtools.stub_provider",
            "--delay",
            str(args.delay),
            "--rate-limit",
            args.rate,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert stub.stdout is not None
    return stub, stub.stdout.readline().strip()


def stop_stand_in(stub: subprocess.Popen[str]) -> int:
    """Stop the stand-in; the 429s it answered."""
    assert stub.stdout is not None
    stub.send_signal(signal.SIGTERM)
    counts = json.loads(stub.stdout.read().strip().splitlines()[-1])
    stub.wait()
    return int(counts["refused"])


def run_mode(args: argparse.Namespace, adaptive: bool) -> tuple[float, int, int]:
    """Wall seconds, answers stored and 429s of one `answers` run on a fresh stand-in."""
    stub, url = start_stand_in(args)
    refused = 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "p"
            make_project(root, args.answers, args.concurrency)
            if not adaptive:
                with (root / "overbrainer.toml").open("a") as config:
                    config.write("adaptive = false\nmax_retries = 50\n")
            else:
                with (root / "overbrainer.toml").open("a") as config:
                    config.write("max_retries = 50\n")
            begun = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "overbrainer", "-C", str(root), "answers"],
                env=overbrainer_env(url),
                capture_output=True,
                text=True,
                check=False,
            )
            wall = time.perf_counter() - begun
            stored = sum(1 for _ in (root / "data" / "answers.jsonl").open())
            if done.returncode != 0:
                print(done.stderr[-2000:], file=sys.stderr)
    finally:
        refused = stop_stand_in(stub)
    return wall, stored, refused


def curator_python() -> Path:
    """The Python of Curator's own virtual environment, made and filled on first use."""
    python = CURATOR_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(CURATOR_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", CURATOR], check=True)
    return python


def run_curator(args: argparse.Namespace) -> tuple[float, int, int]:
    """Curator's wall seconds (its own timing of the run), rows answered and 429s."""
    python = curator_python()
    stub, url = start_stand_in(args)
    refused = 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, CURATOR_CACHE_DIR=tmp, HOME=tmp)
            done = subprocess.run(
                [str(python), "-c", CURATOR_DRIVER, url, str(args.answers)],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                print(done.stderr[-3000:], file=sys.stderr)
                raise SystemExit("curator failed")
            result = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        refused = stop_stand_in(stub)
    return float(result["wall"]), int(result["rows"]), refused


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rate", default="1200/6", help="N/SECONDS: the stand-in's budget")
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--curator", action="store_true", help="also run Curator 0.1.31")
    args = parser.parse_args()
    count, _, window = args.rate.partition("/")
    floor = args.answers / (int(count) / float(window))
    print(f"{args.answers} answers, {args.rate} requests per s window, {args.delay}s per answer")
    print(f"floor (answers / rate): {floor:.1f} s")
    modes = ["adaptive", "fixed", *(["curator"] if args.curator else [])]
    for name in modes:
        if name == "curator":
            wall, stored, refused = run_curator(args)
        else:
            wall, stored, refused = run_mode(args, adaptive=name == "adaptive")
        sent = stored + refused
        print(
            f"{name:<8}: {wall:6.1f} s, {floor / wall:.2f} of the floor's rate, {stored} stored, "
            f"{refused} answered 429 ({100 * refused / max(sent, 1):.1f} % of requests)"
        )


if __name__ == "__main__":
    main()
