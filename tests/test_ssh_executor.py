"""The SSH executor against a real sshd on 127.0.0.1: transfers, jobs, status, cancel, reads,
forwards; each test for both clients (the system OpenSSH client and the builtin one)."""

from __future__ import annotations

import collections.abc
from pathlib import Path

import paramiko
import pytest
import trio

from overbrainer.config.settings import SshClient
from overbrainer.model.job_status import Cancelled, Exited, Running
from overbrainer.targets.executor import TargetUnreachable, TransferError
from overbrainer.targets.manifest import local_manifest, verify
from overbrainer.targets.ssh import OpenSshExecutor
from overbrainer.targets.ssh_builtin import BuiltinSshExecutor
from overbrainer.targets.ssh_builtin.dial import ssh_cause
from overbrainer.targets.ssh_open import open_ssh
from overbrainer.targets.ssh_session import SshExecutor
from tests.pipeline_support import wait_until
from tests.sshd_support import ALIAS, Sshd, connected, fingerprint, kill_jobs_under

BOUND = 60


@pytest.fixture(params=list(SshClient), ids=[client.value for client in SshClient])
def client(request: pytest.FixtureRequest) -> SshClient:
    assert isinstance(request.param, SshClient)
    return request.param


@pytest.fixture
def workdir(tmp_path: Path) -> collections.abc.Iterator[Path]:
    folder = tmp_path / "remote"
    yield folder
    kill_jobs_under(folder)


async def wait_status(executor: SshExecutor, job: object, want: type, seconds: float = 20) -> None:
    from overbrainer.targets.executor import JobRef

    assert isinstance(job, JobRef)
    with trio.fail_after(seconds):
        while not isinstance(await executor.status(job), want):  # noqa: ASYNC110 - remote
            await trio.sleep(0.05)


async def test_connect_resolves_the_workdir_and_refuses_an_unknown_host_key(
    sshd: Sshd, workdir: Path, tmp_path: Path, client: SshClient
) -> None:
    with trio.fail_after(BOUND):
        async with connected(sshd, workdir, client) as executor:
            await executor.connect()
            assert executor.workdir == str(workdir.resolve())  # noqa: ASYNC240 - a test check
        strange = tmp_path / "strange_config"
        strange.write_text(
            sshd.client_config.read_text().replace(str(sshd.root / "known_hosts"), "/dev/null")
        )
        async with open_ssh(
            "box", ALIAS, str(workdir), ssh_config=str(strange), client=client
        ) as executor:
            with pytest.raises(OSError) as caught:
                await executor.connect()
    if client is SshClient.OPENSSH:
        assert str(caught.value) == (
            f"cannot reach target `box`: No ED25519 host key is known for [127.0.0.1]:{sshd.port} "
            "and you have requested strict checking.; Host key verification failed."
        )
    else:
        shown = fingerprint(sshd.root / "host_key.pub")
        assert str(caught.value) == (
            f"cannot reach target `box`: the host key of [127.0.0.1]:{sshd.port} is not in "
            f"/dev/null (strict checking): check that it is {shown} and add it, e.g. by "
            "connecting once with ssh"
        )


async def test_upload_and_download_are_verified_by_the_manifest(
    sshd: Sshd,
    workdir: Path,
    tmp_path: Path,
    client: SshClient,
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
        async with connected(sshd, workdir, client) as executor:
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
    sshd: Sshd,
    workdir: Path,
    client: SshClient,
) -> None:
    run_dir = str(workdir / "r2")
    with trio.fail_after(BOUND):
        async with connected(sshd, workdir, client) as executor:
            await executor.connect()
            job = await executor.spawn(
                run_dir, "sleep 300 & sleep 300; echo done", {"HF_TOKEN": "hf_secret value"}
            )
            await wait_status(executor, job, Running)
        # The master is gone with its block; the job is not.
        async with connected(sshd, workdir, client) as executor:
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
    sshd: Sshd,
    workdir: Path,
    client: SshClient,
) -> None:
    secret = "hf_TopSecret_42"
    run_dir = str(workdir / "r3")
    with trio.fail_after(BOUND):
        async with connected(sshd, workdir, client) as executor:
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


async def test_read_from_and_tail_offsets_and_exit_codes(
    sshd: Sshd, workdir: Path, client: SshClient
) -> None:
    run_dir = str(workdir / "r4")
    with trio.fail_after(BOUND):
        async with connected(sshd, workdir, client) as executor:
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


async def drop_connection(executor: SshExecutor) -> object:
    """Cut the executor's connection as a network loss would; what identifies it."""
    if isinstance(executor, OpenSshExecutor):
        master = executor.master
        assert master is not None
        master.kill()
        await master.wait()
        return master
    assert isinstance(executor, BuiltinSshExecutor)
    transport = executor.transport
    assert transport is not None
    transport.sock.shutdown(2)  # the peer sees a dead socket, as after a network loss
    with trio.fail_after(10):
        while transport.is_active():  # noqa: ASYNC110 - paramiko's own thread notices
            await trio.sleep(0.01)
    return transport


def connection_of(executor: SshExecutor) -> object:
    if isinstance(executor, OpenSshExecutor):
        return executor.master
    assert isinstance(executor, BuiltinSshExecutor)
    return executor.transport


async def test_a_lost_connection_is_made_again_by_the_next_operation(
    sshd: Sshd, workdir: Path, client: SshClient, caplog: pytest.LogCaptureFixture
) -> None:
    with trio.fail_after(BOUND):
        async with connected(sshd, workdir, client) as executor:
            await executor.connect()
            first = await drop_connection(executor)
            assert await executor.probe("echo hello") == "hello\n"
            assert connection_of(executor) is not first
    assert (
        "ssh: the connection to target `box` was lost (its job keeps running): reconnecting"
        in caplog.messages
    )


LOST = "ssh: the connection to target `box` was lost (its job keeps running): reconnecting"


async def test_a_connection_lost_under_a_command_names_its_cause_and_is_made_again(
    sshd: Sshd, workdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    started = workdir / "started"
    with trio.fail_after(BOUND):
        async with connected(sshd, workdir, SshClient.BUILTIN) as executor:
            assert isinstance(executor, BuiltinSshExecutor)
            await executor.connect()
            first = executor.transport
            assert first is not None
            failed: list[str] = []

            async def run_until_dropped() -> None:
                with pytest.raises(TargetUnreachable) as caught:
                    await executor.run(f"touch {started} && exec sleep 600")
                failed.append(str(caught.value))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(run_until_dropped)
                await wait_until(started.exists)  # the command runs on the target
                first.sock.shutdown(2)  # the peer sees a dead socket, as after a network loss
            # Said when the command fails, before anything reconnects.
            assert caplog.messages.count(LOST) == 1
            [message] = failed
            assert message.startswith("cannot reach target `box`: the connection ")
            assert not message.endswith(": ")
            assert await executor.probe("echo hello") == "hello\n"
            assert connection_of(executor) is not first
    assert caplog.messages.count(LOST) == 1


def test_an_ssh_failure_that_says_nothing_is_named_by_its_type() -> None:
    assert ssh_cause(EOFError()) == "EOFError"
    assert ssh_cause(paramiko.SSHException("Channel closed.")) == "Channel closed."


async def echo_server(task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
    """A TCP server on 127.0.0.1 that answers each line with `echo: <line>`."""

    async def answer(stream: trio.SocketStream) -> None:
        async with stream:
            buffered = b""
            while data := await stream.receive_some(1024):
                buffered += data
                while b"\n" in buffered:
                    line, buffered = buffered.split(b"\n", 1)
                    await stream.send_all(b"echo: " + line + b"\n")

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(answer, listeners)


async def receive_lines(stream: trio.SocketStream, count: int) -> bytes:
    got = b""
    while got.count(b"\n") < count:
        data = await stream.receive_some(1024)
        assert data, "the forwarded connection closed"
        got += data
    return got


async def test_a_forwarded_port_reaches_a_server_on_the_target(
    sshd: Sshd, workdir: Path, client: SshClient
) -> None:
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(echo_server)
            async with connected(sshd, workdir, client) as executor:
                await executor.connect()
                async with executor.forward(port) as local:
                    assert local != port
                    for word in (b"one", b"two"):  # two connections, each its own channel
                        stream = await trio.open_tcp_stream("127.0.0.1", local)
                        async with stream:
                            await stream.send_all(word + b"\n" + word + b"\n")
                            assert await receive_lines(stream, 2) == (b"echo: " + word + b"\n") * 2
                # The block ended: the port no longer forwards.
                with pytest.raises(OSError):
                    stream = await trio.open_tcp_stream("127.0.0.1", local)
                    async with stream:
                        await stream.send_all(b"late\n")
                        await receive_lines(stream, 1)
            nursery.cancel_scope.cancel()
