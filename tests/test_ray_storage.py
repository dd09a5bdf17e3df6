"""The `ray` kind's storage through fsspec, on an object-store-like URI (`memory://`, fsspec's
in-process filesystem) and a path: offsets, writes, a fetch with exclusions and size checks."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from overbrainer.targets.ray.errors import RayError
from overbrainer.targets.ray.kind import RAY
from overbrainer.targets.ray.storage import Storage, storage_claim


@pytest.fixture
def bucket() -> Storage:
    """A fresh `memory://` root (the filesystem is per process: a unique prefix per test)."""
    return Storage(f"memory://bucket-{uuid.uuid4().hex}/runs")


async def test_run_files_are_read_from_an_offset_and_written_whole(bucket: Storage) -> None:
    log = bucket.path(f"{bucket.root}/run-1/job.log")
    assert await bucket.read_from(log, 0) == b""
    assert not await bucket.exists(log)
    await bucket.write(log, b"line 1\nline 2\n")
    assert await bucket.read_from(log, 7) == b"line 2\n"
    assert await bucket.read_from(log, 7, 4) == b"line"
    assert await bucket.exists(log)


async def test_a_fetch_brings_entries_here_without_the_excluded_parts(
    bucket: Storage, tmp_path: Path
) -> None:
    run = f"{bucket.root}/run-1"
    files = {
        "metrics.jsonl": b"{}\n",
        "output/adapter_model.safetensors": b"weights",
        "output/checkpoint-2/optimizer.pt": b"big",
        "output/nested/config.json": b"{}",
    }
    for name, data in files.items():
        await bucket.write(bucket.path(f"{run}/{name}"), data)
    local = tmp_path / "run-1"
    await bucket.fetch(
        bucket.path(run), local, ["output", "metrics.jsonl", "job.log"], ["checkpoint-*"]
    )
    here = sorted(p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file())
    assert here == [
        "metrics.jsonl",
        "output/adapter_model.safetensors",
        "output/nested/config.json",
    ]
    assert (local / "output" / "adapter_model.safetensors").read_bytes() == b"weights"


async def test_r_is_claimed_once_per_owner(bucket: Storage) -> None:
    claim = storage_claim(bucket)
    assert await claim(f"{bucket.root}/run-1", "me")
    assert await claim(f"{bucket.root}/run-1", "me")
    assert not await claim(f"{bucket.root}/run-1", "someone else")


def test_a_place_outside_the_root_and_an_unknown_scheme_are_refused(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path / "store"))
    assert storage.path(f"{tmp_path}/store/run-1/x") == f"{tmp_path}/store/run-1/x"
    with pytest.raises(RayError, match="is not under the storage"):
        storage.path(f"{tmp_path}/elsewhere/x")
    with pytest.raises(RayError, match="cannot use the storage nosuchscheme://b"):
        Storage("nosuchscheme://b")


def test_runs_ls_words_come_from_the_record(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(
        '{"job": {"dir": "/s/run-1", "ref": "overbrainer-run-1-ab"}}'
    )
    assert RAY.describe(tmp_path) == "ray overbrainer-run-1-ab"
    assert RAY.describe(tmp_path / "missing") is None
