"""The builtin SSH client's ssh-agent, ProxyJump and passphrase-protected keys, against the
real sshd and a real ssh-agent: a key only the agent holds, a locked key through the agent or
a passphrase typed on a terminal (a pty), jump hosts, and one line for each refusal."""

from __future__ import annotations

import collections.abc
import getpass
import io
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import termios
from pathlib import Path

import paramiko
import pytest
import trio

from overbrainer.config.settings import SshClient
from overbrainer.targets.ssh_builtin.destination import Refused, resolve
from overbrainer.targets.ssh_open import open_ssh
from tests.ports import free_port
from tests.ssh_agent_support import add_key, ssh_agent, with_passphrase
from tests.sshd_support import ALIAS, Sshd, kill_jobs_under
from tests.test_train_ssh import ssh_project
from tests.train_helpers import command, only_run, record, wait_for

BOUND = 60
PASSPHRASE = "correct horse battery"


@pytest.fixture
def workdir(tmp_path: Path) -> collections.abc.Iterator[Path]:
    folder = tmp_path / "remote"
    folder.mkdir()
    yield folder
    kill_jobs_under(folder)


@pytest.fixture
def no_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """No agent of the environment's, and no terminal to ask a passphrase on."""
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    monkeypatch.setattr(sys, "stdin", io.StringIO())


def client_config(sshd: Sshd, tmp_path: Path, identity: str | None, extra: str = "") -> Path:
    """The suite's client config for `ALIAS` with IdentityFile `identity` (none: the line and
    IdentitiesOnly left out), and more lines (other Host blocks) after it; a new file each."""
    lines = sshd.client_config.read_text().splitlines()
    lines = [line for line in lines if line.split()[0] not in ("IdentityFile", "IdentitiesOnly")]
    if identity is not None:
        lines += [f"  IdentityFile {identity}", "  IdentitiesOnly yes"]
    path = tmp_path / f"ssh_config_{len(list(tmp_path.glob('ssh_config_*')))}"
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


async def echo(config: Path, workdir: Path, host: str = ALIAS) -> paramiko.Transport:
    """Connect over the builtin client and run `echo`; the transport it used."""
    with trio.fail_after(BOUND):
        async with open_ssh(
            "box", host, str(workdir), ssh_config=str(config), client=SshClient.BUILTIN
        ) as executor:
            await executor.connect()
            assert await executor.probe("echo over") == "over\n"
            transport = executor.transport  # type: ignore[attr-defined]
            assert isinstance(transport, paramiko.Transport)
            return transport


async def refusal(config: Path, workdir: Path, host: str = ALIAS) -> str:
    with trio.fail_after(BOUND):
        async with open_ssh(
            "box", host, str(workdir), ssh_config=str(config), client=SshClient.BUILTIN
        ) as executor:
            with pytest.raises(OSError) as caught:
                await executor.connect()
    return str(caught.value)


async def test_a_key_only_the_agent_holds_authenticates(
    sshd: Sshd, tmp_path: Path, workdir: Path, no_terminal: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    public_only = tmp_path / "public_only"  # the key file itself is not here, its .pub is
    public_only.with_suffix(".pub").write_text((sshd.root / "id_ed25519.pub").read_text())
    named = client_config(sshd, tmp_path, str(public_only))
    assert await refusal(named, workdir) == (
        f"cannot reach target `box`: the key file {public_only} does not exist"
    )
    with ssh_agent(tmp_path / "agent") as sock:
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        add_key(sock, sshd.root / "id_ed25519")
        await echo(named, workdir)  # IdentitiesOnly: the agent's key of that .pub
        await echo(client_config(sshd, tmp_path, None), workdir)  # no IdentityFile: any key
        monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "no_agent.sock"))
        assert await refusal(named, workdir) == (
            f"cannot reach target `box`: the key file {public_only} does not exist"
        )


async def test_a_key_with_a_passphrase_works_through_the_agent_and_is_refused_without(
    sshd: Sshd, tmp_path: Path, workdir: Path, no_terminal: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = with_passphrase(sshd.root / "id_ed25519", tmp_path / "locked", PASSPHRASE)
    config = client_config(sshd, tmp_path, str(locked))
    assert await refusal(config, workdir) == (
        f"cannot reach target `box`: the key file {locked} has a passphrase and no ssh-agent "
        f"holds it: add it with `ssh-add {locked}` (or run overbrainer on a terminal to be "
        "asked for the passphrase)"
    )
    with ssh_agent(tmp_path / "agent") as sock:
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        add_key(sock, locked, PASSPHRASE)
        await echo(config, workdir)


async def test_a_wrong_passphrase_is_one_line(
    sshd: Sshd, tmp_path: Path, workdir: Path, no_terminal: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = with_passphrase(sshd.root / "id_ed25519", tmp_path / "locked", PASSPHRASE)
    master, terminal = pty.openpty()
    with os.fdopen(terminal) as stdin, os.fdopen(master):
        monkeypatch.setattr(sys, "stdin", stdin)
        monkeypatch.setattr(getpass, "getpass", lambda prompt: "not it")
        assert await refusal(client_config(sshd, tmp_path, str(locked)), workdir) == (
            f"cannot reach target `box`: the passphrase given for the key file {locked} is wrong"
        )


def jump_block(
    sshd: Sshd, name: str, jump: str, port: int | None = None, identity: Path | None = None
) -> str:
    """A Host block like the suite's `ALIAS` (with IdentityFile `identity` when given),
    reached through `jump`."""
    lines = sshd.client_config.read_text().splitlines()
    replaced = ("Port", "IdentityFile", "IdentitiesOnly") if identity else ("Port",)
    body = [line for line in lines[1:] if line.split()[0] not in replaced]
    if identity:
        body += [f"  IdentityFile {identity}", "  IdentitiesOnly yes"]
    return "\n".join(
        [f"Host {name}", *body, f"  Port {port or sshd.port}", f"  ProxyJump {jump}", ""]
    )


async def test_proxy_jump_goes_through_each_jump_host(
    sshd: Sshd, tmp_path: Path, workdir: Path, no_terminal: None
) -> None:
    closed = free_port()
    blocks = [
        jump_block(sshd, "ob-via", ALIAS),
        jump_block(sshd, "ob-twice", f"{ALIAS},{getpass.getuser()}@{ALIAS}:{sshd.port}"),
        jump_block(sshd, "ob-chained", "ob-via"),  # the jump host has a jump host of its own
        jump_block(sshd, "ob-far", ALIAS, closed),
        jump_block(sshd, "ob-loop", "ob-loop"),
    ]
    config = client_config(sshd, tmp_path, str(sshd.root / "id_ed25519"), "".join(blocks))
    direct = await echo(config, workdir)
    assert isinstance(direct.sock, socket.socket)
    for host in ("ob-via", "ob-twice", "ob-chained"):
        transport = await echo(config, workdir, host)
        assert isinstance(transport.sock, paramiko.Channel), host  # inside the jump host's
    far = await refusal(config, workdir, "ob-far")
    assert far.startswith(
        f"cannot reach target `box`: the jump host {ALIAS} cannot reach host 127.0.0.1 port "
        f"{closed}: "
    ), far
    assert await refusal(config, workdir, "ob-loop") == (
        f"cannot reach target `box`: the ProxyJump hosts of ob-loop in {config} go round in a loop"
    )


def test_a_passphrase_is_asked_for_on_a_terminal_and_refused_without_one(
    sshd: Sshd, tmp_path: Path
) -> None:
    locked = with_passphrase(sshd.root / "id_ed25519", tmp_path / "locked", PASSPHRASE)
    remote = tmp_path / "remote"
    project, env = ssh_project(tmp_path, sshd, remote, SshClient.BUILTIN)
    env.pop("SSH_AUTH_SOCK", None)
    env["OVERBRAINER_SSH_CONFIG"] = str(client_config(sshd, tmp_path, str(locked)))
    try:
        refused = subprocess.run(
            command(project, "train"),
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=90,
            start_new_session=True,  # no controlling terminal either
        )
        assert refused.returncode == 1, refused.stderr
        assert refused.stderr.splitlines()[-1] == (
            f"error: cannot reach target `box`: the key file {locked} has a passphrase and no "
            f"ssh-agent holds it: add it with `ssh-add {locked}` (or run overbrainer on a "
            "terminal to be asked for the passphrase)"
        )
        master, terminal = pty.openpty()
        # Ctrl-C at the prompt: the command ends, and the terminal gets its echo back.
        err = tmp_path / "interrupted.err"
        with open(err, "w") as stderr:
            interrupted = subprocess.Popen(
                command(project, "train"),
                env=env,
                stdin=terminal,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                start_new_session=True,
            )
        try:
            wait_for(lambda: "Enter passphrase for key" in err.read_text(), 60)
            assert not termios.tcgetattr(master)[3] & termios.ECHO  # the prompt turned it off
            interrupted.send_signal(signal.SIGINT)
            interrupted.communicate(timeout=60)
        finally:
            interrupted.kill()
            interrupted.wait()
        assert interrupted.returncode == 130, err.read_text()
        assert err.read_text().splitlines()[-1] == "interrupted before the run started"
        assert termios.tcgetattr(master)[3] & termios.ECHO
        err = tmp_path / "train.err"
        with open(err, "w") as stderr:
            train = subprocess.Popen(
                command(project, "train"),
                env=env,
                stdin=terminal,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                start_new_session=True,  # the pty is its only terminal
            )
        os.close(terminal)
        try:
            wait_for(lambda: f"Enter passphrase for key '{locked}': " in err.read_text(), 60)
            os.write(master, f"{PASSPHRASE}\n".encode())
            out, _ = train.communicate(timeout=90)
        finally:
            train.kill()
            train.wait()
        assert train.returncode == 0, err.read_text()
        run_id = only_run(project)
        assert out.splitlines()[0].startswith(f"train: run {run_id} succeeded")
        assert record(project, run_id)["state"] == "succeeded"
        echoed = b""
        while select.select([master], [], [], 0)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the terminal's last user is gone
                break
            if not chunk:
                break
            echoed += chunk
        os.close(master)
        assert PASSPHRASE.encode() not in echoed  # typed without echo
        assert PASSPHRASE not in err.read_text() + out
    finally:
        kill_jobs_under(remote)


def test_train_through_a_jump_host_with_the_key_only_in_the_agent(
    sshd: Sshd, tmp_path: Path
) -> None:
    public_only = tmp_path / "public_only"  # the key file itself is not on this machine
    public_only.with_suffix(".pub").write_text((sshd.root / "id_ed25519.pub").read_text())
    remote = tmp_path / "remote"
    project, env = ssh_project(tmp_path, sshd, remote, SshClient.BUILTIN)
    env["OVERBRAINER_TARGETS__BOX__HOST"] = "ob-via"
    via = jump_block(sshd, "ob-via", ALIAS, identity=public_only)
    config = client_config(sshd, tmp_path, str(public_only), via)
    env["OVERBRAINER_SSH_CONFIG"] = str(config)
    try:
        with ssh_agent(tmp_path / "agent") as sock:
            env["SSH_AUTH_SOCK"] = str(sock)
            add_key(sock, sshd.root / "id_ed25519")
            done = subprocess.run(
                command(project, "train"),
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=120,
            )
        assert done.returncode == 0, done.stderr
        run_id = only_run(project)
        assert done.stdout.splitlines()[0].startswith(f"train: run {run_id} succeeded")
        assert record(project, run_id)["state"] == "succeeded"
    finally:
        kill_jobs_under(remote)


def test_proxy_jump_specs_resolve_through_the_config(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(
        "Host target\n  HostName 10.0.0.9\n  ProxyJump me@[::1]:2222,bastion,ssh://ops@gate:22\n"
        "Host bastion\n  HostName 192.0.2.1\n  User admin\n  Port 2200\n  ProxyJump outer\n"
        "Host odd\n  ProxyJump gate:ssh\n"
    )
    jumps = resolve("target", str(config)).jumps
    assert [(hop.user, hop.hostname, hop.port) for hop in jumps] == [
        ("me", "::1", 2222),
        (getpass.getuser(), "outer", 22),  # bastion's own jump host comes first
        ("admin", "192.0.2.1", 2200),
        ("ops", "gate", 22),
    ]
    assert resolve("bastion", str(config)).jumps[0].alias == "outer"
    with pytest.raises(Refused) as caught:
        resolve("odd", str(config))
    assert str(caught.value) == "the ProxyJump host gate:ssh has a port that is not a number"
