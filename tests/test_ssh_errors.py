"""SSH failures a user can act on, through `overbrainer train` and the real sshd: a changed host
key and a missing key file are one line each, naming the host, the known_hosts file, the key."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from overbrainer.config.settings import SshClient
from tests.sshd_support import Sshd
from tests.test_train_ssh import CLIENTS, ssh_project
from tests.train_helpers import overbrainer


def own_client_config(tmp_path: Path, sshd: Sshd, **changes: str) -> Path:
    """A copy of the sshd's client config with some of its files replaced."""
    text = sshd.client_config.read_text()
    for old, new in changes.items():
        text = text.replace(str(sshd.root / old), new)
    config = tmp_path / "ssh_config"
    config.write_text(text)
    return config


def train_with(
    project: Path, env: dict[str, str], config: Path
) -> subprocess.CompletedProcess[str]:
    return overbrainer(project, env | {"OVERBRAINER_SSH_CONFIG": str(config)}, "train")


@CLIENTS
def test_a_changed_host_key_is_one_line_naming_the_host_and_the_file(
    sshd: Sshd, tmp_path: Path, client: SshClient
) -> None:
    project, env = ssh_project(tmp_path, sshd, tmp_path / "remote", client)
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    kind, key = other.with_suffix(".pub").read_text().split()[:2]
    known = tmp_path / "known_hosts"
    host = f"[127.0.0.1]:{sshd.port}"
    known.write_text(f"{host} {kind} {key}\n")
    done = train_with(project, env, own_client_config(tmp_path, sshd, known_hosts=str(known)))
    assert done.returncode == 1, done.stderr
    last = done.stderr.splitlines()[-1]
    assert len(done.stderr.splitlines()) <= 3, done.stderr
    assert "@@@" not in done.stderr and "NASTY" not in done.stderr
    if client is SshClient.OPENSSH:
        assert last == (
            f"error: cannot reach target `box`: the host key of {host} has changed since "
            f"{known} (line 1) stored it: if the host was reinstalled, remove the old key with "
            f"`ssh-keygen -f {known} -R {host}`; if not, someone may be intercepting the "
            "connection"
        )
    else:
        assert last.startswith(
            f"error: cannot reach target `box`: the host key of {host} does not match {known} "
        )
    assert not (project / "runs").exists() or not any((project / "runs").glob("*/run.json"))


@CLIENTS
def test_a_missing_key_file_is_named(sshd: Sshd, tmp_path: Path, client: SshClient) -> None:
    project, env = ssh_project(tmp_path, sshd, tmp_path / "remote", client)
    absent = tmp_path / "keys" / "id_nowhere"
    done = train_with(project, env, own_client_config(tmp_path, sshd, id_ed25519=str(absent)))
    assert done.returncode == 1, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("error: cannot reach target `box`: "), done.stderr
    assert last.endswith(f"the key file {absent} does not exist"), done.stderr


@pytest.mark.parametrize("client", [SshClient.OPENSSH], ids=["openssh"])
def test_a_refused_key_that_exists_keeps_the_servers_words(
    sshd: Sshd, tmp_path: Path, client: SshClient
) -> None:
    project, env = ssh_project(tmp_path, sshd, tmp_path / "remote", client)
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    done = train_with(project, env, own_client_config(tmp_path, sshd, id_ed25519=str(stranger)))
    assert done.returncode == 1, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("error: cannot reach target `box`: "), done.stderr
    assert last.endswith("Permission denied (publickey)."), done.stderr
