"""Make a dataset through overbrainer's Python API: run the stages, print progress, read records.

    overbrainer init demo --demo        # a project on the built-in stand-in (no key, no network)
    python docs/examples/api_example.py demo

Exits with the code the command line would give (0 done, 1 failed, 2 refused, 130 Ctrl-C).
"""

from __future__ import annotations

import sys

import trio

import overbrainer.api as ob


def show(event: ob.Event) -> None:
    """Print a line when a stage starts and when it finishes (every event comes here, in order)."""
    match event:
        case ob.StageStarted(stage=stage, total=total):
            print(f"{stage}: started, {total} to do", flush=True)
        case ob.StageFinished(stage=stage, stats=stats):
            print(f"{stage}: finished, {stats.done} done, {stats.failed} failed", flush=True)


async def main(path: str) -> int:
    """Open the project, run its stages, then read its history and runs."""
    project = ob.open_project(path)
    stages = [ob.Stage.SUBTOPICS, ob.Stage.QUESTIONS, ob.Stage.ANSWERS, ob.Stage.SPLIT]
    result = await project.run_stages(stages, on_event=show)
    for line in result.lines:  # the summary lines the command line prints on stdout
        print(line)
    print(f"outcome: {result.outcome.value} (exit code {result.exit_code})")
    if result.error is not None:
        print(f"error: {result.error.message}", file=sys.stderr)
    for record in project.history():
        cost = "unknown" if record.cost is None else f"${record.cost:.4f}"
        print(f"history: {record.stage} {record.status}, {record.done} done, cost {cost}")
    print(f"training runs: {len(project.runs())}")
    return result.exit_code


if __name__ == "__main__":
    sys.exit(trio.run(main, sys.argv[1] if len(sys.argv) > 1 else "."))
