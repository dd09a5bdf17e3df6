"""System samples of a remote target: the probe script run through its executor."""

from __future__ import annotations

import time

from overbrainer.model.system_sample import SystemSample
from overbrainer.system.probe import parse_probe, probe_script
from overbrainer.targets.executor import Executor


class ProbeSampler:
    """Runs the §5.5 probe in the run directory's machine; CPU usage from the previous one."""

    def __init__(self, executor: Executor, run_dir: str) -> None:
        self._executor = executor
        self._script = probe_script(run_dir)
        self._previous: SystemSample | None = None

    async def sample(self) -> SystemSample | None:
        """One sample of the target."""
        output = await self._executor.probe(self._script)
        sample = parse_probe(output, time.time(), self._previous)
        self._previous = sample
        return sample
