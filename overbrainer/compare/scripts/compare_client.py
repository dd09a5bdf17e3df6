"""Ask a model (llama-server on 127.0.0.1) every question of questions.jsonl, measuring it.

Standard library only: it runs on the compare target with whatever Python is there. For the
child (`--role child`) it writes hardware.json, child_answers.jsonl (one line per question,
flushed), and with --concurrency N above 1 also load.json: the same questions sent N at a time.
For the base model (`--role base`) it writes base_answers.jsonl alone.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import platform
import queue
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Any

PREFIX = "compare"
REQUEST_TIMEOUT = 600
SERVER = {"log": "server.log", "name": "llama-server"}
"""The server log whose tail a failure shows (`--server-log`), and how a failure names the
server (the base model's is named so)."""


def fail(message: str) -> None:
    sys.stderr.write(f"{PREFIX}: {message}\n")
    sys.exit(1)


def say(message: str) -> None:
    sys.stderr.write(f"{PREFIX}: {message}\n")
    sys.stderr.flush()


def log_tail(lines: int = 20) -> str:
    try:
        with open(SERVER["log"], encoding="utf-8", errors="replace") as log:
            return "\n" + "\n".join(log.read().splitlines()[-lines:])
    except OSError:
        return f"\n(no {SERVER['log']})"


def exited(pid: int) -> bool:
    """Whether the server process has ended (a zombie counts as ended)."""
    try:
        os.kill(pid, 0)
    except OSError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def run(command: list[str]) -> str | None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def gpus_of(build: str) -> list[str]:
    if build.startswith("ubuntu-cuda-"):
        out = run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"]) or ""
        return [line.strip() for line in out.splitlines() if line.strip()]
    if build.startswith("ubuntu-rocm-"):
        found = amd_gpus()
        discrete = [name for name in found if name != "AMD Radeon Graphics"]
        return discrete or found or ["AMD GPU"]
    if build.startswith("macos-"):
        brand = (run(["sysctl", "-n", "machdep.cpu.brand_string"]) or "").strip()
        return [f"{brand or 'Apple'} (Metal)"]
    return []


def amd_gpus() -> list[str]:
    out = run(["rocm-smi", "--showproductname"]) or ""
    names = [line.split(":", 2)[-1].strip() for line in out.splitlines() if "Card Series" in line]
    if names:
        return names
    out = run(["amd-smi", "static", "--asic"]) or ""
    names = [line.split(":", 1)[1].strip() for line in out.splitlines() if "MARKET_NAME" in line]
    if names:
        return names
    out = run(["lspci"]) or ""
    return [
        line.split(": ", 1)[-1].strip()
        for line in out.splitlines()
        if ("VGA" in line or "Display" in line) and "AMD" in line
    ]


def cpu_name() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    brand = (run(["sysctl", "-n", "machdep.cpu.brand_string"]) or "").strip()
    return brand or platform.processor() or None


class Metrics:
    """`eval` lines in the job's metrics file: at 0, every 2 s or more, and at the end."""

    def __init__(self, total: int, offset: int = 0) -> None:
        self.path = os.environ.get("OVERBRAINER_METRICS")
        self.total = total
        self.offset = offset
        self.last = 0.0

    def step(self, done: int) -> None:
        step = self.offset + done
        now = time.time()
        if done != 0 and step != self.total and now - self.last < 2:
            return
        self.last = now
        if not self.path:
            return
        line = {"event": "eval", "time": now, "step": step, "total": self.total}
        try:
            with open(self.path, "a", encoding="utf-8") as out:
                out.write(json.dumps(line) + "\n")
        except OSError:
            pass


def wait_ready(port: int, pid: int, seconds: int) -> None:
    deadline = time.monotonic() + seconds
    while True:
        if exited(pid):
            fail(f"{SERVER['name']} exited before it was ready:" + log_tail())
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, OSError, ValueError):
            pass
        if time.monotonic() >= deadline:
            fail(f"{SERVER['name']} was not ready after {seconds} s:" + log_tail())
        time.sleep(0.5)


def ask(
    port: int, messages: list[dict[str, str]], max_tokens: int, temperature: float
) -> dict[str, Any]:
    """One streamed answer and its timings (the fields of a child_answers.jsonl line)."""
    body = json.dumps(
        {
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    ).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/chat/completions",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    start = time.monotonic()
    first = None
    parts: list[str] = []
    finish = None
    usage: dict[str, Any] = {}
    timings: dict[str, Any] = {}
    complete = False
    with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT) as reply:
        for raw in reply:
            line = raw.decode("utf-8", errors="replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                complete = True
                break
            event = json.loads(data)
            for choice in event.get("choices") or []:
                delta = choice.get("delta") or {}
                if first is None and (delta.get("content") or delta.get("reasoning_content")):
                    first = time.monotonic() - start
                if delta.get("content"):
                    parts.append(delta["content"])
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
            usage = event.get("usage") or usage
            timings = event.get("timings") or timings
    if not complete:
        raise ValueError("the answer stream ended before [DONE]")
    seconds = time.monotonic() - start
    output = usage.get("completion_tokens", timings.get("predicted_n"))
    speed = None
    if output and first is not None and seconds - first > 0:
        speed = round(output / (seconds - first), 2)
    return {
        "answer": "".join(parts),
        "finish": finish,
        "input_tokens": usage.get("prompt_tokens", timings.get("prompt_n")),
        "output_tokens": output,
        "seconds": round(seconds, 4),
        "first_token_seconds": None if first is None else round(first, 4),
        "tokens_per_second": speed,
    }


ASK_ERRORS = (urllib.error.URLError, http.client.HTTPException, OSError, ValueError)


def ask_or_error(
    port: int, pid: int, question: dict[str, Any], args: argparse.Namespace
) -> dict[str, Any]:
    try:
        line = ask(port, question["messages"], args.max_tokens, args.temperature)
    except ASK_ERRORS as error:
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            if exited(pid):
                fail(f"{SERVER['name']} exited while answering:" + log_tail())
            time.sleep(0.1)
        return {"id": question["id"], "error": str(error)}
    return {"id": question["id"], **line}


def percentile(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(p * len(ordered) / 100)) - 1]


def under_load(
    port: int, pid: int, questions: list[dict[str, Any]], args: argparse.Namespace
) -> dict[str, Any]:
    """Every question again, `concurrency` at a time: throughput of a loaded server."""
    todo: queue.Queue[dict[str, Any]] = queue.Queue()
    for question in questions:
        todo.put(question)
    results: list[dict[str, Any]] = []
    lock = threading.Lock()

    def worker() -> None:
        while True:
            try:
                question = todo.get_nowait()
            except queue.Empty:
                return
            line = ask_or_error(port, pid, question, args)
            with lock:
                results.append(line)

    start = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(args.concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - start
    good = [r for r in results if "error" not in r]
    tokens = sum(r.get("output_tokens") or 0 for r in good)
    latencies = [r["seconds"] for r in good]
    return {
        "concurrency": args.concurrency,
        "requests": len(results),
        "errors": len(results) - len(good),
        "wall_seconds": round(wall, 4),
        "requests_per_second": round(len(good) / wall, 4) if wall > 0 and good else None,
        "tokens_per_second": round(tokens / wall, 2) if wall > 0 and good else None,
        "latency_p50": percentile(latencies, 50),
        "latency_p95": percentile(latencies, 95),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--server-pid", type=int, required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--role", choices=("child", "base"), default="child")
    parser.add_argument("--server-log", default="server.log")
    parser.add_argument("--models", type=int, default=1)
    parser.add_argument("--index", type=int, default=0)
    args = parser.parse_args()
    child = args.role == "child"
    SERVER["log"] = args.server_log
    if not child:
        SERVER["name"] = "the base model's llama-server"
    args.max_tokens = int(os.environ.get("OVERBRAINER_COMPARE_MAX_TOKENS", "4096"))
    args.temperature = float(os.environ.get("OVERBRAINER_COMPARE_TEMPERATURE", "0"))
    start_secs = int(os.environ.get("OVERBRAINER_COMPARE_START_SECS", "300"))

    if child:
        hardware = {"build": args.build, "gpus": gpus_of(args.build), "cpu": cpu_name()}
        with open("hardware.json", "w", encoding="utf-8") as out:
            out.write(json.dumps(hardware, indent=2) + "\n")
    with open("questions.jsonl", encoding="utf-8") as source:
        questions = [json.loads(line) for line in source if line.strip()]
    wait_ready(args.port, args.server_pid, start_secs)
    say(f"asking {len(questions)} questions" + ("" if child else " of the base model"))
    # With the base, the steps run over both models' answers: 0 to 2 x the questions.
    metrics = Metrics(len(questions) * args.models, len(questions) * args.index)
    metrics.step(0)
    answers = f"{args.role}_answers.jsonl"
    with open(answers, "w", encoding="utf-8") as out:
        for done, question in enumerate(questions, 1):
            line = ask_or_error(args.port, args.server_pid, question, args)
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
            out.flush()
            metrics.step(done)
    say(f"wrote {answers}")
    # The load figures are the child's alone.
    if child and args.concurrency > 1:
        say(f"asking {len(questions)} questions again, {args.concurrency} at a time")
        load = under_load(args.port, args.server_pid, questions, args)
        with open("load.json", "w", encoding="utf-8") as out:
            out.write(json.dumps(load, indent=2) + "\n")
        say("wrote load.json")


if __name__ == "__main__":
    main()
