"""Counting the live Trio tasks, to prove that nothing outlives its flow."""

from __future__ import annotations

import trio


def live_tasks() -> int:
    """Every task under the root task of this run."""
    count = 0
    root = trio.lowlevel.current_root_task()
    assert root is not None
    pending = [root]
    while pending:
        task = pending.pop()
        count += 1
        for nursery in task.child_nurseries:
            pending.extend(nursery.child_tasks)
    return count
