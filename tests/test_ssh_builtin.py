"""The builtin SSH client against the real sshd: each refusal is one line naming what to fix
(unknown or changed host key, missing, locked or refused key file, unreachable host,
ProxyCommand), a pod's own ssh config (HostKeyAlias) works, and a cancelled command leaves no
thread blocked."""

from __future__ import annotations

import collections.abc
import getpass
import io
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
import trio

from overbrainer.config.settings import SshClient
from overbrainer.targets.runpod.keys import (
    CLIENT_KEY,
    host_alias,
    ssh_dir,
    write_known_hosts,
    write_ssh_config,
)
from overbrainer.targets.runpod.types import SshEndpoint
from overbrainer.targets.ssh_open import open_ssh
from tests.ports import free_port
from tests.sshd_support import ALIAS, Sshd, connected, fingerprint, kill_jobs_under

BOUND = 60


@pytest.fixture
def workdir(tmp_path: Path) -> collections.abc.Iterator[Path]:
    folder = tmp_path / "remote"
    folder.mkdir()
    yield folder
    kill_jobs_under(folder)


def keygen(path: Path, passphrase: str = "") -> Path:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return path


def config_with(sshd: Sshd, tmp_path: Path, **replace: str) -> Path:
    """The tests' ssh config with some lines replaced (`Key=value`) or added."""
    lines = sshd.client_config.read_text().splitlines()
    for key, value in replace.items():
        kept = [line for line in lines if line.split()[0] != key]
        lines = [*kept, f"  {key} {value}"]
    path = tmp_path / "ssh_config"
    path.write_text("\n".join(lines) + "\n")
    return path


async def connect_error(config: Path, workdir: Path, host: str = ALIAS) -> str:
    with trio.fail_after(BOUND):
        async with open_ssh(
            "box", host, str(workdir), ssh_config=str(config), client=SshClient.BUILTIN
        ) as executor:
            with pytest.raises(OSError) as caught:
                await executor.connect()
    return str(caught.value)


async def test_a_changed_host_key_names_the_host_and_the_known_hosts_file(
    sshd: Sshd, tmp_path: Path, workdir: Path
) -> None:
    other = keygen(tmp_path / "other_host_key")
    known = tmp_path / "known_hosts"
    blob = other.with_suffix(".pub").read_text().split()[:2]
    known.write_text(f"[127.0.0.1]:{sshd.port} {' '.join(blob)}\n")
    config = config_with(sshd, tmp_path, UserKnownHostsFile=str(known))
    shown = fingerprint(sshd.root / "host_key.pub")
    assert await connect_error(config, workdir) == (
        f"cannot reach target `box`: the host key of [127.0.0.1]:{sshd.port} does not match "
        f"{known} (the host offered {shown}): if the host was reinstalled, remove its old line "
        "there"
    )


async def test_key_files_missing_locked_or_refused_are_named(
    sshd: Sshd, tmp_path: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)  # no agent...
    monkeypatch.setattr(sys, "stdin", io.StringIO())  # ...and no terminal to ask on
    missing = tmp_path / "no_such_key"
    config = config_with(sshd, tmp_path, IdentityFile=str(missing))
    assert await connect_error(config, workdir) == (
        f"cannot reach target `box`: the key file {missing} does not exist"
    )
    locked = keygen(tmp_path / "locked_key", passphrase="secret words")
    config = config_with(sshd, tmp_path, IdentityFile=str(locked))
    assert await connect_error(config, workdir) == (
        f"cannot reach target `box`: the key file {locked} has a passphrase and no ssh-agent "
        f"holds it: add it with `ssh-add {locked}` (or run overbrainer on a terminal to be "
        "asked for the passphrase)"
    )
    stranger = keygen(tmp_path / "stranger_key")
    config = config_with(sshd, tmp_path, IdentityFile=str(stranger))
    assert await connect_error(config, workdir) == (
        f"cannot reach target `box`: permission denied: {getpass.getuser()}@127.0.0.1 accepts "
        f"none of the keys {stranger}"
    )


async def test_an_unreachable_host_and_a_proxy_command_are_one_line_each(
    sshd: Sshd, tmp_path: Path, workdir: Path
) -> None:
    closed = free_port()
    config = config_with(sshd, tmp_path, Port=str(closed))
    assert await connect_error(config, workdir) == (
        f"cannot reach target `box`: connect to host 127.0.0.1 port {closed}: Connection refused"
    )
    config = config_with(sshd, tmp_path, ProxyCommand="nc %h %p")
    assert await connect_error(config, workdir) == (
        f"cannot reach target `box`: ProxyCommand is set for {ALIAS} in {config}: the builtin SSH "
        'client does not support it (set ssh_client = "openssh")'
    )


async def test_a_pods_ssh_config_with_its_host_key_alias_connects(
    sshd: Sshd, tmp_path: Path, workdir: Path
) -> None:
    """The files a Runpod run writes (`runs/<id>/ssh/`: config, known_hosts under the alias
    `overbrainer-<id>`, id_ed25519), in a directory whose name needs quoting."""
    run_id = "p_20260101-000000"
    run_dir = tmp_path / "my runs 100%" / run_id
    ssh_dir(run_dir).mkdir(parents=True)
    shutil.copyfile(sshd.root / "id_ed25519", ssh_dir(run_dir) / CLIENT_KEY)
    (ssh_dir(run_dir) / CLIENT_KEY).chmod(0o600)
    write_known_hosts(run_dir, run_id, (sshd.root / "host_key.pub").read_text())
    endpoint = SshEndpoint("127.0.0.1", sshd.port, getpass.getuser())
    config = write_ssh_config(run_dir, run_id, endpoint)
    with trio.fail_after(BOUND):
        async with open_ssh(
            "pod",
            host_alias(run_id),
            str(workdir),
            ssh_config=str(config),
            client=SshClient.BUILTIN,
        ) as executor:
            await executor.connect()
            assert await executor.probe("echo pod") == "pod\n"
    # Another host key under the alias: refused, naming the alias and the run's file.
    other = keygen(tmp_path / "other_host_key")
    write_known_hosts(run_dir, run_id, other.with_suffix(".pub").read_text())
    known = ssh_dir(run_dir.absolute()) / "known_hosts"
    shown = fingerprint(sshd.root / "host_key.pub")
    assert await connect_error(config, workdir, host_alias(run_id)) == (
        f"cannot reach target `box`: the host key of {host_alias(run_id)} does not match {known} "
        f"(the host offered {shown}): if the host was reinstalled, remove its old line there"
    )


def paramiko_waits() -> list[str]:
    """Threads now blocked in a paramiko channel wait (recv, sendall, the exit status)."""
    waits = {"recv", "recv_stderr", "sendall", "recv_exit_status", "exec_command"}
    found = []
    for thread_id, frame in sys._current_frames().items():
        walk: types.FrameType | None = frame
        while walk is not None:
            code = walk.f_code
            in_channel = code.co_filename.endswith(os.path.join("paramiko", "channel.py"))
            if in_channel and code.co_name in waits:
                found.append(f"{thread_id}: {code.co_name}")
                break
            walk = walk.f_back
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("client", list(SshClient), ids=[client.value for client in SshClient])
async def test_a_cancelled_command_ends_on_the_target_and_leaves_no_thread_blocked(
    sshd: Sshd, workdir: Path, client: SshClient
) -> None:
    """A Ctrl-C in the middle of a remote command: the channel is closed, so the command dies
    of SIGPIPE on the target, and no worker thread stays in a paramiko wait."""
    pid_file = workdir / "loop.pid"
    loop = f"echo $$ > {pid_file}; while :; do echo tick; sleep 0.05; done"
    with trio.fail_after(BOUND):
        async with connected(sshd, workdir, client) as executor:
            await executor.connect()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(executor.probe, loop)
                while not pid_file.exists() or not pid_file.read_text().strip():  # noqa: ASYNC110
                    await trio.sleep(0.01)
                pid = int(pid_file.read_text())
                assert alive(pid)
                while client is SshClient.BUILTIN and not paramiko_waits():  # noqa: ASYNC110
                    await trio.sleep(0.01)  # the check below sees a waiting thread
                nursery.cancel_scope.cancel()
            while alive(pid):  # noqa: ASYNC110 - the target's process, watched from here
                await trio.sleep(0.01)
            while paramiko_waits():  # noqa: ASYNC110 - threads end once the close is done
                await trio.sleep(0.01)
            assert await executor.probe("echo still connected") == "still connected\n"
