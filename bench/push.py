"""Push throughput to the loopback fake Hub for a 500 MB file, beside a plain `cp` of it.

The push is the real `overbrainer push` command (huggingface_hub over LFS, Xet off): the
figure includes hashing the file (SHA-256, which LFS needs) and the fake Hub reading and
hashing what it receives on the same machine. `cp` is the floor of moving those bytes here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.hub_support import RUN_ID, TOKEN, fake_hub, hub_env, make_run, push_command

SIZE = 500_000_000
BLOCK = 16 << 20


def _big_file(path: Path) -> int:
    block = os.urandom(BLOCK)
    left = SIZE
    with open(path, "wb") as file:
        index = 0
        while left > 0:
            file.write((block[index:] + block[:index])[:left])
            left -= min(left, BLOCK)
            index += 1
    return path.stat().st_size


def _library_alone(url: str, token: str, path: Path) -> float:
    """The same upload with huggingface_hub called directly (no overbrainer around it)."""
    os.environ.update(HF_HUB_DISABLE_XET="1", HF_HUB_DISABLE_PROGRESS_BARS="1")
    from huggingface_hub import CommitOperationAdd, HfApi

    api = HfApi(endpoint=url, token=token)
    started = time.perf_counter()
    api.create_repo("alice/direct", exist_ok=True)
    operation = CommitOperationAdd(path_in_repo="model.safetensors", path_or_fileobj=str(path))
    api.create_commit("alice/direct", operations=[operation], commit_message="direct")
    return time.perf_counter() - started


def main() -> None:
    """Print push and cp throughput side by side."""
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        root = tmp / "project"
        run_dir = make_run(root, {"adapter_config.json": b"{}\n"})
        model = run_dir / "output" / "model.safetensors"
        size = _big_file(model)
        started = time.perf_counter()
        subprocess.run(["cp", str(model), str(tmp / "copy.bin")], check=True)
        cp_s = time.perf_counter() - started
        os.remove(tmp / "copy.bin")
        with fake_hub(tmp) as hub:
            env = hub_env(tmp, hub.url)
            started = time.perf_counter()
            result = subprocess.run(push_command(root), env=env, capture_output=True, text=True)
            push_s = time.perf_counter() - started
            if result.returncode != 0:
                raise SystemExit(result.stderr)
            uploaded = sum(entry.get("bytes", 0) for entry in hub.calls("upload"))
        (tmp / "hub.url").unlink()
        with fake_hub(tmp) as fresh:  # a Hub that does not hold the file yet
            direct_s = _library_alone(fresh.url, TOKEN, model)
            assert sum(entry.get("bytes", 0) for entry in fresh.calls("upload")) == size
        mb = size / 1e6
        print(f"push {RUN_ID}: {mb:.0f} MB uploaded {uploaded / 1e6:.0f} MB")
        print(f"overbrainer push (whole command):   {push_s:6.2f} s  {mb / push_s:7.1f} MB/s")
        print(f"huggingface_hub alone (in-process): {direct_s:6.2f} s  {mb / direct_s:7.1f} MB/s")
        print(f"cp of the same file:                {cp_s:6.2f} s  {mb / cp_s:7.1f} MB/s")
        print(f"push ÷ library time: {push_s / direct_s:.2f}; push ÷ cp time: {push_s / cp_s:.1f}")


if __name__ == "__main__":
    main()
