"""Following a training job: metric-line parse rate, and the follow loop's CPU share."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import trio

from overbrainer.events.bus import open_event_bus
from overbrainer.events.types import Event
from overbrainer.model.job_status import Exited, JobStatus
from overbrainer.system.sampler import LocalSampler
from overbrainer.targets.local import LocalJob, LocalRunJob, start_job
from overbrainer.training.follow_job import CANCEL_BOUND, FollowTimes, MetricsTail, follow
from overbrainer.training.summary import MetricsSummary
from overbrainer.ui.progress import ProgressLines

LINES = 100_000
RUNS = 5
"""Parse figures are the best of this many runs: other work on the machine only slows them."""
LOGGING_SECONDS = 20
"""How long the job of the CPU-share figure writes 10 lines/s."""


class CountingObserver:
    """Counts events, as a cheap stand-in for the metrics observer."""

    def __init__(self) -> None:
        self.count = 0

    def event(self, bus: int, event: Event) -> None:
        self.count += 1

    def closed(self, bus: int) -> None:
        pass


def write_lines(path: Path) -> None:
    """100,000 lines as a long training writes them: begin, logs, an eval every 50 steps, end."""
    with open(path, "w") as file:
        file.write('{"event":"stage","name":"train","time":1700000000}\n')
        file.write(json.dumps({"event": "begin", "time": 1.0, "max_steps": LINES}) + "\n")
        for step in range(1, LINES - 2):
            if step % 50 == 0:
                record = {"event": "eval", "time": 2.0 + step, "step": step % 7 + 1, "total": 7}
            else:
                record = {
                    "event": "log",
                    "time": 2.0 + step,
                    "step": step,
                    "epoch": step / LINES,
                    "max_steps": LINES,
                    "loss": 1.0 + 1 / step,
                    "learning_rate": 2e-4,
                    "grad_norm": 0.5,
                }
            file.write(json.dumps(record) + "\n")
        file.write(json.dumps({"event": "end", "time": 9.0, "step": LINES}) + "\n")


class EndedJob(LocalRunJob):
    """A local job that has already exited: following it reads and drains the whole file."""

    async def status(self) -> JobStatus:
        return Exited(0)


async def parse_rate(run_dir: Path) -> tuple[float, float]:
    """Lines/s of the whole follow (read, parse, publish to a subscriber) and of parsing alone."""
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        write_lines(path)
    started = time.perf_counter()
    summary = MetricsSummary()
    for line in path.read_text().splitlines():
        summary.add(line)
    bare = LINES / (time.perf_counter() - started)
    job = EndedJob(LocalJob(run_dir, 2))
    tail = MetricsTail(MetricsSummary())
    observer = CountingObserver()
    started = time.perf_counter()
    async with trio.open_nursery() as nursery, open_event_bus(observer=observer) as bus:
        subscription = bus.subscribe()

        async def drain() -> None:
            while True:
                try:
                    await subscription.receive_batch()
                except trio.EndOfChannel:
                    return

        nursery.start_soon(drain)
        await follow(job, bus, tail, run_id="bench", times=FollowTimes())
    elapsed = time.perf_counter() - started
    assert tail.summary.lines == LINES - 1, tail.summary.lines  # the stage line is not counted
    return LINES / elapsed, bare


async def cpu_share(run_dir: Path) -> tuple[float, int]:
    """This process's CPU time / wall time while following a job that logs 10 lines/s."""
    count = LOGGING_SECONDS * 10
    script = (
        f"i=0; while [ $i -lt {count} ]; do "
        """printf '{"event":"log","time":%s,"step":%d,"max_steps":"""
        f"""{count},"loss":1.5}}\\n' "$(date +%s)" $i >> metrics.jsonl; """
        "i=$((i+1)); sleep 0.1; done"
    )
    job = LocalRunJob(await start_job(run_dir, script))
    tail = MetricsTail(MetricsSummary())
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        # The CLI's progress lines, as `train` logs them.
        async with open_event_bus(observer=ProgressLines()) as bus:
            await follow(
                job, bus, tail, run_id="bench", times=FollowTimes(), sampler=LocalSampler(run_dir)
            )
    finally:
        # A bench stopped midway (Ctrl-C) leaves no job behind; an ended one is left as is.
        with trio.move_on_after(CANCEL_BOUND, shield=True):
            await job.cancel()
    share = (time.process_time() - cpu) / (time.perf_counter() - wall)
    return share, tail.summary.lines


async def main() -> None:
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as folder:
        runs = [await parse_rate(Path(folder)) for _ in range(RUNS)]
    rate, bare = max(r[0] for r in runs), max(r[1] for r in runs)
    print(f"best of {RUNS} runs")
    print(f"follow of {LINES:,} metric lines (read, parse, publish): {rate:,.0f} lines/s")
    print(f"parse alone (MetricsSummary.add): {bare:,.0f} lines/s")
    with tempfile.TemporaryDirectory() as folder:
        share, lines = await cpu_share(Path(folder))
    print(
        f"follow loop CPU while a job logs 10 lines/s for {LOGGING_SECONDS} s "
        f"({lines} lines): {share * 100:.2f} % of one core"
    )


if __name__ == "__main__":
    sys.exit(trio.run(main))
