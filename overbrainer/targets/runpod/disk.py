"""The client's disk policy for a followed pod (§7.7): warn as the disk fills, then act."""

from __future__ import annotations

import logging
import math
import os
import shlex
from collections.abc import Awaitable, Callable, Mapping

import attrs
import trio

from overbrainer.model.error_groups import unwrapped
from overbrainer.model.errors import OverbrainerError
from overbrainer.targets.executor import Executor
from overbrainer.targets.job_names import SNAPSHOT_REQUEST
from overbrainer.targets.runpod.api import RunpodApi
from overbrainer.targets.runpod.create_body import VOLUME_DIR, pod_path
from overbrainer.targets.runpod.errors import RunpodError

log = logging.getLogger(__name__)

DISK_ENV = "OVERBRAINER_TEST_DISK"
"""Test hook: `every,warn,act` (seconds between samples, percent to warn at, percent to act at)."""
KB_PER_GB = 1_000_000_000 / 1024


@attrs.frozen
class DiskPolicy:
    """When the disk is sampled, warned about and acted on."""

    every: float = 10.0
    warn: int = 85
    step: int = 5
    act: int = 92
    checkpoint_every: float = 60.0
    """The newest checkpoint's size is measured at most this often."""
    headroom: float = 1.5
    """Act when less than this many times the newest checkpoint is free."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> DiskPolicy:
        """The defaults, or the test hook's values when set and valid."""
        text = (os.environ if environ is None else environ).get(DISK_ENV, "")
        parts = text.split(",")
        try:
            every, warn, act = float(parts[0]), int(parts[1]), int(parts[2])
        except (ValueError, IndexError):
            return cls()
        if not (math.isfinite(every) and every > 0 and 0 < warn <= act <= 100):
            return cls()
        return cls(every=every, warn=warn, act=act, checkpoint_every=every)


@attrs.frozen
class DiskSample:
    """KB used and free, and the newest checkpoint's KB when it was measured."""

    used_kb: int
    free_kb: int
    checkpoint_kb: int | None = None

    @property
    def percent(self) -> int:
        """Percent used, rounded down."""
        total = self.used_kb + self.free_kb
        return 0 if total <= 0 else self.used_kb * 100 // total

    @property
    def free_gb(self) -> float:
        """GB free (10^9 bytes)."""
        return self.free_kb / KB_PER_GB


@attrs.define
class DiskGuard:
    """What each sample calls for: warning lines, and once, the action."""

    policy: DiskPolicy
    what: str = "disk"
    """`disk` (the container's) or `network volume`."""
    warned: int | None = None
    acted: bool = False

    def warning(self, sample: DiskSample) -> str | None:
        """The line at the warn threshold, then at each further step; None otherwise."""
        percent = sample.percent
        if percent < self.policy.warn:
            return None
        band = (
            self.policy.warn + (percent - self.policy.warn) // self.policy.step * self.policy.step
        )
        if self.warned is not None and band <= self.warned:
            return None
        self.warned = band
        return f"the pod's {self.what} is {percent}% full ({sample.free_gb:.1f} GB free)"

    def must_act(self, sample: DiskSample) -> bool:
        """Whether this sample calls for the action (only once)."""
        if self.acted:
            return False
        small = (
            sample.checkpoint_kb is not None
            and sample.free_kb < self.policy.headroom * sample.checkpoint_kb
        )
        if sample.percent >= self.policy.act or small:
            self.acted = True
            return True
        return False


def disk_script(remote_dir: str, volume_dir: str | None, checkpoint: bool) -> str:
    """Prints `used_kb free_kb` of R's disk (or `used_kb` of the volume), then, with
    `checkpoint`, the KB of the newest `output/checkpoint-*`."""
    r = shlex.quote(remote_dir)
    if volume_dir is None:
        lines = [f"df -Pk {r} | awk 'NR==2 {{print $3, $4}}'"]
    else:
        lines = [f"du -sk {shlex.quote(volume_dir)} 2>/dev/null | cut -f1"]
    if checkpoint:
        lines.append(
            f'newest=""; best=-1\nfor d in {r}/output/checkpoint-*; do\n'
            '    [ -d "$d" ] || continue\n'
            "    n=${d##*checkpoint-}\n"
            "    case $n in ''|*[!0-9]*) continue ;; esac\n"
            '    if [ "$n" -gt "$best" ]; then best=$n; newest=$d; fi\n'
            "done\n"
            'if [ -n "$newest" ]; then du -sk "$newest" | cut -f1; fi'
        )
    return "\n".join(lines) + "\n"


def parse_sample(text: str, volume_gb: int | None) -> DiskSample | None:
    """The sample from `disk_script`'s output; None when it cannot be read."""
    try:
        lines = [[int(word) for word in line.split()] for line in text.splitlines() if line]
    except ValueError:
        return None
    if not lines or not lines[0]:
        return None
    checkpoint = lines[1][0] if len(lines) > 1 and lines[1] else None
    if volume_gb is None:
        if len(lines[0]) != 2:
            return None
        return DiskSample(lines[0][0], lines[0][1], checkpoint)
    used = lines[0][0]
    return DiskSample(used, max(0, int(volume_gb * KB_PER_GB) - used), checkpoint)


Grow = Callable[[], Awaitable[bool]]
"""Grows the network volume; whether it now shows the new size."""


async def guard_disk(
    executor: Executor,
    remote_dir: str,
    policy: DiskPolicy,
    *,
    volume_dir: str | None = None,
    volume_gb: Callable[[], int | None] = lambda: None,
    grow: Grow | None = None,
) -> None:
    """Sample the pod's disk while following: warn as it fills; at the act threshold (or too
    little room for another checkpoint) grow the volume when allowed, else ask the job for a
    snapshot (`snapshot.request` = `disk`, an existing request kept)."""
    guard = DiskGuard(policy, "disk" if volume_dir is None else "network volume")
    measured = -math.inf
    while True:
        now = trio.current_time()
        checkpoint = now - measured >= policy.checkpoint_every
        try:
            text = await executor.probe(disk_script(remote_dir, volume_dir, checkpoint))
        except (OverbrainerError, OSError) as error:
            log.debug("pod: cannot sample the disk: %s", error)
            text = ""
        if checkpoint:
            measured = now
        sample = parse_sample(text, volume_gb() if volume_dir is not None else None)
        if sample is not None:
            line = guard.warning(sample)
            if line is not None:
                log.warning("%s", line)
            if guard.must_act(sample):
                if grow is not None and await grow():
                    guard.acted = False  # room again: the next fill acts again
                    guard.warned = None
                else:
                    await _request_snapshot(executor, remote_dir)
        await trio.sleep(policy.every)


async def _request_snapshot(executor: Executor, remote_dir: str) -> None:
    path = f"{remote_dir}/{SNAPSHOT_REQUEST}"
    try:
        if await executor.exists(path):
            return
        await executor.put_file(path, "disk")
        log.warning("the pod's disk is nearly full: its job is stopped with a snapshot")
    except (OverbrainerError, OSError) as error:
        log.warning("cannot ask the job for a snapshot before the disk fills: %s", error)


def grown_size(size_gb: int, max_gb: int) -> int:
    """The size a full volume grows to: max(1.5 ×, +50 GB), capped at `max_volume_gb`."""
    return min(max(math.ceil(size_gb * 1.5), size_gb + 50), max_gb)


async def follow_disk(
    executor: Executor,
    remote_dir: str,
    policy: DiskPolicy,
    api: RunpodApi,
    volume_id: str | None,
    max_volume_gb: int | None,
) -> None:
    """The disk policy of a followed pod: its container disk, or its network volume (size
    re-read every minute into `.pod/volume_gb`, grown up to `max_volume_gb` when allowed)."""
    if volume_id is None:
        await guard_disk(executor, remote_dir, policy)
        return
    size: list[int] = []

    async def read_size() -> int | None:
        try:
            volume = await api.network_volume(volume_id)
        except RunpodError as error:
            log.debug("pod: cannot read the network volume's size: %s", error.message)
            return None
        size[:] = [volume.size_gb]
        try:
            await executor.put_file(f"{remote_dir}/.pod/volume_gb", str(volume.size_gb))
        except (OverbrainerError, OSError) as error:
            log.debug("pod: cannot write .pod/volume_gb: %s", error)
        return volume.size_gb

    async def reread() -> None:
        while True:
            await read_size()
            await trio.sleep(60.0)

    async def grow() -> bool:
        if max_volume_gb is None or not size or size[0] >= max_volume_gb:
            return False
        wanted = grown_size(size[0], max_volume_gb)
        try:
            await api.resize_volume(volume_id, wanted)
        except RunpodError as error:
            log.warning("cannot grow network volume %s: %s", volume_id, error.message)
            return False
        for _ in range(2):  # it must show within two samples
            await trio.sleep(policy.every)
            shown = await read_size()
            if shown is not None and shown >= wanted:
                log.info("pod: network volume %s grown to %d GB", volume_id, shown)
                return True
        log.warning("network volume %s did not grow to %d GB in time", volume_id, wanted)
        return False

    async with unwrapped(), trio.open_nursery() as nursery:
        nursery.start_soon(reread)
        await guard_disk(
            executor,
            remote_dir,
            policy,
            volume_dir=pod_path(VOLUME_DIR),
            volume_gb=lambda: size[0] if size else None,
            grow=grow,
        )
