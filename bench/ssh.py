"""SSH target figures on loopback: operation latency over the ControlMaster vs a fresh
connection each time, and upload throughput of a 200 MB run directory (tar stream) vs
reading the same directory here (`tar | cat > /dev/null`: GNU tar skips reading files when it
writes to /dev/null itself); then the same operation and upload over the builtin client
(paramiko, `ssh_client = "builtin"`)."""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from overbrainer.targets.ssh import open_openssh
from overbrainer.targets.ssh_builtin import open_builtin
from tests.sshd_support import ALIAS, SSHD, make_sshd

OPERATIONS = 40
FILES = 20
FILE_MB = 10


def _tree(root: Path) -> int:
    """A run directory of FILES × FILE_MB MB of random bytes (incompressible); its size."""
    (root / "output").mkdir(parents=True)
    block = os.urandom(FILE_MB << 20)
    for index in range(FILES):
        (root / "output" / f"shard-{index:02d}.bin").write_bytes(block[index:] + block[:index])
    return FILES * (FILE_MB << 20)


async def _timed(run: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await run()
    return time.perf_counter() - started


async def main(work: Path) -> None:
    server = make_sshd(work / "sshd")
    server.start()
    try:
        async with open_openssh(
            "bench", ALIAS, str(work / "remote"), ssh_config=str(server.client_config)
        ) as executor:
            await executor.connect()
            muxed = [await _timed(partial(executor.run, "true")) for _ in range(OPERATIONS)]
            fresh = [
                await _timed(partial(trio.run_process, executor.fresh_command("true")))
                for _ in range(OPERATIONS)
            ]
            print(f"operation over the master: median {statistics.median(muxed) * 1e3:.1f} ms")
            print(
                f"operation on a fresh connection: median {statistics.median(fresh) * 1e3:.1f} ms"
            )
            source = work / "run"
            size = await trio.to_thread.run_sync(_tree, source)
            mb = size / 1e6
            reads = []
            uploads = []
            for attempt in range(3):
                reads.append(
                    await _timed(
                        partial(
                            trio.run_process,
                            ["sh", "-c", f"tar -C {source} -cf - . | cat > /dev/null"],
                        )
                    )
                )
                target = str(work / "remote" / f"up{attempt}")
                uploads.append(await _timed(partial(executor.upload, source, target)))
                await trio.to_thread.run_sync(shutil.rmtree, target)
            print(f"read here (tar | cat > /dev/null, best of 3): {mb / min(reads):.0f} MB/s")
            print(f"upload over ssh (tar | ssh tar -x, best of 3): {mb / min(uploads):.0f} MB/s")
        async with open_builtin(
            "bench", ALIAS, str(work / "remote"), ssh_config=str(server.client_config)
        ) as builtin:
            await builtin.connect()
            channels = [await _timed(partial(builtin.run, "true")) for _ in range(OPERATIONS)]
            print(f"operation over builtin: median {statistics.median(channels) * 1e3:.1f} ms")
            uploads = []
            for attempt in range(3):
                target = str(work / "remote" / f"builtin{attempt}")
                uploads.append(await _timed(partial(builtin.upload, source, target)))
                await trio.to_thread.run_sync(shutil.rmtree, target)
            print(f"upload over builtin (best of 3): {mb / min(uploads):.0f} MB/s")
            print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    finally:
        server.stop()


if __name__ == "__main__":
    if not SSHD.exists():
        print("skipped: no /usr/sbin/sshd (install openssh-server)")
        raise SystemExit(0)
    with tempfile.TemporaryDirectory(prefix="ob-bench-ssh-") as folder:
        trio.run(main, Path(folder))
