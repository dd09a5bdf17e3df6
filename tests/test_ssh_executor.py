"""The SSH executor against a real sshd on 127.0.0.1: transfers, jobs, status, cancel, reads."""

from __future__ import annotations

import collections.abc
import contextlib
from pathlib import Path

import pytest
import trio

from overbrainer.model.job_status import Cancelled, Exited, Running
from overbrainer.targets.executor import TransferError
from overbrainer.targets.manifest import local_manifest, verify
from overbrainer.targets.ssh import SshExecutor, open_ssh
from tests.sshd_support import ALIAS, Sshd, kill_jobs_under

BOUND = 60


@pytest.fixture
def workdir(tmp_path: Path) -> collections.abc.Iterator[Path]:
    folder = tmp_path / "remote"
    yield folder
    kill_jobs_under(folder)


def connected(sshd: Sshd, workdir: Path) -> contextlib.AbstractAsyncContextManager[SshExecutor]:
    return open_ssh("box", ALIAS, str(workdir), ssh_config=str(sshd.client_config))


async def wait_status(executor: SshExecutor, job: object, want: type, seconds: float = 20) -> None:
    from overbrainer.targets.executor import JobRef

    assert isinstance(job, JobRef)
    with trio.fail_after(seconds):
        while not isinstance(await executor.status(job), want):  # noqa: ASYNC110 - remote
            await trio.sleep(0.05)


async def test_connect_resolves_the_workdir_and_refuses_an_unknown_host_key(
    sshd: Sshd, workdir: Path, tmp_path: Path
) -> None:
    with trio.fail_after(BOUND):
        async with connected(sshd, workdir) as executor:
            await executor.connect()
            assert executor.workdir == str(workdir.resolve())  # noqa: ASYNC240 - a test check
        strange = tmp_path / "strange_config"
        strange.write_text(
            sshd.client_config.read_text().replace(str(sshd.root / "known_hosts"), "/dev/null")
        )
        async with open_ssh("box", ALIAS, str(workdir), ssh_config=str(strange)) as executor:
            with pytest.raises(OSError) as caught:
                await executor.connect()
    assert str(caught.value) == (
        f"cannot reach target `box`: No ED25519 host key is known for [127.0.0.1]:{sshd.port} "
        "and you have requested strict checking.; Host key verification failed."
    )


async def test_upload_and_download_are_verified_by_the_manifest(
    sshd: Sshd, workdir: Path, tmp_path: Path
) -> None:
    source = tmp_path / "local"
    (source / "output" / "checkpoint-3").mkdir(parents=True)
    (source / "output" / "adapter.bin").write_bytes(bytes(range(256)) * 100)
    (source / "output" / "checkpoint-3" / "state.pt").write_bytes(b"state")
    (source / "job.log").write_text("one\ntwo\n")
    (source / "ssh").mkdir()
    (source / "ssh" / "id_ed25519").write_text("never uploaded")
    remote = str(workdir / "r1")
    back = tmp_path / "back"
    entries = ["output", "metrics.jsonl", "job.log"]
    with trio.fail_after(BOUND):
        async with connected(sshd, workdir) as executor:
            await executor.connect()
            await executor.upload(source, remote, skip=["ssh", "pod.json"])
            assert not (workdir / "r1" / "ssh").exists()
            assert (workdir / "r1" / "output" / "adapter.bin").read_bytes() == (
                source / "output" / "adapter.bin"
            ).read_bytes()
            manifest = await executor.manifest(remote, entries, ["checkpoint-*"])
            assert sorted(manifest) == ["job.log", "output/adapter.bin"]
            await executor.download(remote, back, entries, ["checkpoint-*"])
            verify(manifest, local_manifest(back, entries, ["checkpoint-*"]))
            assert not (back / "output" / "checkpoint-3").exists()
            # One flipped byte on the target is caught.
            data = bytearray((workdir / "r1" / "output" / "adapter.bin").read_bytes())
            data[1000] ^= 0x01
            (workdir / "r1" / "output" / "adapter.bin").write_bytes(bytes(data))
            changed = await executor.manifest(remote, entries, ["checkpoint-*"])
            with pytest.raises(TransferError) as caught:
                verify(changed, local_manifest(back, entries, ["checkpoint-*"]))
            assert caught.value.message == (
                'verify failed: "output/adapter.bin" differs from the target (SHA-256 mismatch)'
            )
            (back / "extra.txt").write_text("x")
            with pytest.raises(TransferError) as caught:
                verify(manifest, local_manifest(back, [*entries, "extra.txt"]))
            assert caught.value.message == 'verify failed: "extra.txt" is not on the target'
            (back / "job.log").unlink()
            with pytest.raises(TransferError) as caught:
                verify(manifest, local_manifest(back, entries, ["checkpoint-*"]))
            assert caught.value.message == 'verify failed: "job.log" is missing locally'
            # Nothing of the entries there: an empty download, an empty manifest.
            empty = tmp_path / "empty"
            await executor.download(remote, empty, ["nothing"], [])
            assert list(empty.iterdir()) == []
            assert await executor.manifest(remote, ["nothing"]) == {}
            with pytest.raises(TransferError) as caught:
                await executor.manifest(str(workdir / "missing"), entries)
    assert f"{workdir / 'missing'} does not exist" in caught.value.message


async def test_a_detached_job_survives_the_masters_end_and_is_cancelled_as_a_group(
    sshd: Sshd, workdir: Path
) -> None:
    run_dir = str(workdir / "r2")
    with trio.fail_after(BOUND):
        async with connected(sshd, workdir) as executor:
            await executor.connect()
            job = await executor.spawn(
                run_dir, "sleep 300 & sleep 300; echo done", {"HF_TOKEN": "hf_secret value"}
            )
            await wait_status(executor, job, Running)
        # The master is gone with its block; the job is not.
        async with connected(sshd, workdir) as executor:
            await executor.connect()
            assert isinstance(await executor.status(job), Running)
            leader = (workdir / "r2" / "job.pid").read_text().strip()
            assert leader.isdigit()
            await executor.cancel(job)
            assert isinstance(await executor.status(job), Cancelled)
            assert (workdir / "r2" / "cancelled").exists()
            members = (
                await trio.run_process(
                    ["pgrep", "-g", str(job.pid)], capture_stdout=True, check=False
                )
            ).stdout
            assert members == b""
            # A second cancel of an ended job sends nothing and succeeds.
            await executor.cancel(job)


async def test_secrets_reach_the_job_on_stdin_never_on_a_command_line(
    sshd: Sshd, workdir: Path
) -> None:
    secret = "hf_TopSecret_42"
    run_dir = str(workdir / "r3")
    with trio.fail_after(BOUND):
        async with connected(sshd, workdir) as executor:
            await executor.connect()
            job = await executor.spawn(
                run_dir, 'printf "%s\\n" "$HF_TOKEN" > token.txt && sleep 30', {"HF_TOKEN": secret}
            )
            await wait_status(executor, job, Running)
            with trio.fail_after(10):
                while not (workdir / "r3" / "token.txt").exists():  # noqa: ASYNC110
                    await trio.sleep(0.05)
            ps = await trio.run_process(["ps", "-eo", "args"], capture_stdout=True)
            args = ps.stdout.decode()
            assert "sleep 30" in args
            assert secret not in args
            assert (workdir / "r3" / "token.txt").read_text() == secret + "\n"
            await executor.cancel(job)
            with pytest.raises(Exception) as caught:
                await executor.spawn(run_dir, "true", {"HF_TOKEN": "two\nlines"})
    assert str(caught.value) == "HF_TOKEN cannot be passed to the job"


async def test_read_from_and_tail_offsets_and_exit_codes(sshd: Sshd, workdir: Path) -> None:
    run_dir = str(workdir / "r4")
    with trio.fail_after(BOUND):
        async with connected(sshd, workdir) as executor:
            await executor.connect()
            assert await executor.read_from(f"{run_dir}/job.log", 0) == b""
            job = await executor.spawn(run_dir, "printf 'abc\\ndef\\nghi' && exit 3", {})
            await wait_status(executor, job, Exited)
            assert await executor.status(job) == Exited(3)
            log = f"{run_dir}/job.log"
            assert await executor.read_from(log, 0) == b"abc\ndef\nghi"
            assert await executor.read_from(log, 4) == b"def\nghi"
            assert await executor.read_from(log, 4, 3) == b"def"
            assert await executor.read_from(log, 11) == b""
            assert await executor.exists(log)
            assert not await executor.exists(f"{run_dir}/nothing")
            await executor.put_file(f"{run_dir}/snapshot.request", "requested\n")
            assert (workdir / "r4" / "snapshot.request").read_text() == "requested\n"
            assert await executor.claim(f"{run_dir}x", "0123456789abcdef")
            assert await executor.claim(f"{run_dir}x", "0123456789abcdef")
            assert not await executor.claim(f"{run_dir}x", "fedcba9876543210")


async def test_a_killed_master_is_started_again_by_the_next_operation(
    sshd: Sshd, workdir: Path
) -> None:
    with trio.fail_after(BOUND):
        async with connected(sshd, workdir) as executor:
            await executor.connect()
            first = executor.master
            assert first is not None
            first.kill()
            await first.wait()
            assert await executor.probe("echo hello") == "hello\n"
            assert executor.master is not first
