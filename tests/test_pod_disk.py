"""The client's disk policy of a followed pod (§7.7): thresholds, the probe, volume growth."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import trio

from overbrainer.targets.local_executor import LocalExecutor
from overbrainer.targets.runpod.api import open_runpod
from overbrainer.targets.runpod.disk import (
    DiskGuard,
    DiskPolicy,
    DiskSample,
    disk_script,
    follow_disk,
    grown_size,
    parse_sample,
)
from tests.runpod_fake import KEY, open_fake


def sample(percent: int) -> DiskSample:
    total = 100_000_000
    used = total * percent // 100
    return DiskSample(used, total - used)


def test_warnings_at_85_then_each_5_and_one_action_at_92() -> None:
    guard = DiskGuard(DiskPolicy())
    lines = [guard.warning(sample(p)) for p in (80, 85, 86, 89, 90, 93, 96, 97, 100)]
    assert lines == [
        None,
        "the pod's disk is 85% full (15.4 GB free)",
        None,
        None,
        "the pod's disk is 90% full (10.2 GB free)",
        None,
        "the pod's disk is 96% full (4.1 GB free)",
        None,
        "the pod's disk is 100% full (0.0 GB free)",
    ]
    guard = DiskGuard(DiskPolicy())
    assert [guard.must_act(sample(p)) for p in (91, 92, 95)] == [False, True, False]


def test_too_little_room_for_another_checkpoint_acts_below_92() -> None:
    guard = DiskGuard(DiskPolicy())
    # Half full, with 1.5 x the newest checkpoint free: nothing yet; a bit less: act.
    assert not guard.must_act(DiskSample(60_000, 60_000, 40_000))
    assert guard.must_act(DiskSample(59_999, 59_999, 40_000))


def test_a_volume_grows_by_half_or_50_gb_up_to_its_cap() -> None:
    assert grown_size(100, 1000) == 150
    assert grown_size(40, 1000) == 90
    assert grown_size(100, 120) == 120


def test_parse_sample() -> None:
    assert parse_sample("900 100\n50\n", None) == DiskSample(900, 100, 50)
    assert parse_sample("900 100\n", None) == DiskSample(900, 100, None)
    assert parse_sample("garbage\n", None) is None
    assert parse_sample("", None) is None
    volume = parse_sample("976563\n", 2)  # 1 GB used of 2 GB
    assert volume is not None and volume.percent == 50


def test_the_probe_script_measures_the_disk_and_the_newest_checkpoint(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    for step, size in ((5, 10_000), (40, 300_000), (10, 20_000)):
        folder = run_dir / "output" / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        (folder / "weights").write_bytes(b"x" * size)
    done = subprocess.run(
        ["sh", "-c", disk_script(str(run_dir), None, True)], capture_output=True, check=True
    )
    measured = parse_sample(done.stdout.decode(), None)
    assert measured is not None and measured.free_kb > 0
    assert measured.checkpoint_kb is not None and 290 <= measured.checkpoint_kb <= 400
    without = subprocess.run(
        ["sh", "-c", disk_script(str(run_dir), None, False)], capture_output=True, check=True
    )
    assert len(without.stdout.decode().splitlines()) == 1


@pytest.mark.parametrize(("max_gb", "grows"), [(300, True), (None, False)])
async def test_a_full_volume_grows_else_the_job_is_asked_for_a_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, max_gb: int | None, grows: bool
) -> None:
    # The volume is 10 GB and holds 0.15 GB: full at once for a policy that acts at 1 %.
    monkeypatch.setenv("OVERBRAINER_TEST_POD_ROOT", str(tmp_path / "pod"))
    volume_dir = tmp_path / "pod" / "workspace" / "data"
    volume_dir.mkdir(parents=True)
    (volume_dir / "data.bin").write_bytes(b"\1" * 150_000_000)
    run_dir = tmp_path / "run"
    (run_dir / ".pod").mkdir(parents=True)
    executor = LocalExecutor(tmp_path)
    volume = {"id": "vol1", "name": "v", "size": 10, "dataCenter": "EU-RO-1", "type": "STANDARD"}
    volume_gb, request = run_dir / ".pod" / "volume_gb", run_dir / "snapshot.request"

    def acted() -> bool:
        """The volume grown and seen grown; else the snapshot asked for."""
        seen = volume_gb.read_text() if volume_gb.exists() else None
        return seen == "60" if grows else seen == "10" and request.exists()

    with trio.fail_after(30):
        async with open_fake() as fake:
            fake.volumes.append(volume)
            async with open_runpod(fake.url, KEY) as api, trio.open_nursery() as nursery:
                policy = DiskPolicy(every=0.05, warn=1, act=1, checkpoint_every=0.05)
                nursery.start_soon(follow_disk, executor, str(run_dir), policy, api, "vol1", max_gb)
                # The follower's files are written atomically, with no event to wait on: poll.
                while not acted():  # noqa: ASYNC110
                    await trio.sleep(0.02)
                nursery.cancel_scope.cancel()
        assert fake.violations == []
    if grows:
        assert volume["size"] == 60
        assert volume_gb.read_text() == "60"
        assert not request.exists()
    else:
        assert volume["size"] == 10
        assert volume_gb.read_text() == "10"
        assert request.read_text() == "disk"
