"""Benchmark adaptive concurrency against a rate-limited stand-in provider, beside the floor.

The stand-in (`python -m overbrainer.devtools.stub_provider --rate-limit N/SECONDS`, in its own
process) allows N requests per window, answers in `--delay` seconds, sends OpenAI's
`x-ratelimit-*` headers and a 429 with `Retry-After` over budget. `overbrainer answers` runs on
`--answers` questions at `concurrency = 64`, adaptive (the default) then fixed
(`adaptive = false`). Printed: wall time, the budget's floor (answers / rate), their ratio, and
the 429s. A scaled minute: 1,200 requests per 6 s is 200 requests/s.

Run: `python bench/adaptive.py [--answers 2000] [--rate 1200/6] [--delay 0.2]`.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# bench/ is the script's directory, so its sibling is importable as run by `nox -s bench`.
from pipeline import make_project, overbrainer_env


def run_mode(args: argparse.Namespace, adaptive: bool) -> tuple[float, int, int]:
    """Wall seconds, answers stored and 429s of one `answers` run on a fresh stand-in."""
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
    url = stub.stdout.readline().strip()
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
        stub.send_signal(signal.SIGTERM)
        counts = json.loads(stub.stdout.read().strip().splitlines()[-1])
        stub.wait()
    return wall, stored, int(counts["refused"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rate", default="1200/6", help="N/SECONDS: the stand-in's budget")
    parser.add_argument("--delay", type=float, default=0.2)
    args = parser.parse_args()
    count, _, window = args.rate.partition("/")
    floor = args.answers / (int(count) / float(window))
    print(f"{args.answers} answers, {args.rate} requests per s window, {args.delay}s per answer")
    print(f"floor (answers / rate): {floor:.1f} s")
    for adaptive in (True, False):
        wall, stored, refused = run_mode(args, adaptive)
        name = "adaptive" if adaptive else "fixed   "
        sent = stored + refused
        print(
            f"{name}: {wall:6.1f} s, {floor / wall:.2f} of the floor's rate, {stored} stored, "
            f"{refused} answered 429 ({100 * refused / max(sent, 1):.1f} % of requests)"
        )


if __name__ == "__main__":
    main()
