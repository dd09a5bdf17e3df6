"""A real ssh-agent for the tests, on a socket of its own, and keys added to it."""

from __future__ import annotations

import collections.abc
import contextlib
import os
import shutil
import subprocess
import time
from pathlib import Path

from tests.real_parts import missing


@contextlib.contextmanager
def ssh_agent(folder: Path) -> collections.abc.Iterator[Path]:
    """An `ssh-agent -D` listening on `folder/agent.sock` for the block; the socket."""
    if shutil.which("ssh-agent") is None or shutil.which("ssh-add") is None:
        missing("no ssh-agent here: install the OpenSSH client")
    folder.mkdir(parents=True, exist_ok=True)
    sock = folder / "agent.sock"
    agent = subprocess.Popen(
        ["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 30
        while not sock.exists():
            if agent.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ssh-agent did not start: {agent.stderr}")
            time.sleep(0.02)
        yield sock
    finally:
        agent.kill()
        agent.wait()


def add_key(sock: Path, key: Path, passphrase: str = "") -> None:
    """`ssh-add key`, the passphrase given by an askpass script (no terminal needed)."""
    askpass = key.parent / f"{key.name}.askpass"
    askpass.write_text(f"#!/bin/sh\necho '{passphrase}'\n")
    askpass.chmod(0o700)
    env = {
        **os.environ,
        "SSH_AUTH_SOCK": str(sock),
        "SSH_ASKPASS": str(askpass),
        "SSH_ASKPASS_REQUIRE": "force",
        "DISPLAY": ":0",
    }
    done = subprocess.run(
        ["ssh-add", str(key)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        start_new_session=True,
    )
    assert done.returncode == 0, done.stderr


def with_passphrase(key: Path, copy: Path, passphrase: str) -> Path:
    """A copy of key file `key` (and its .pub) protected by `passphrase`."""
    shutil.copyfile(key, copy)
    shutil.copyfile(f"{key}.pub", f"{copy}.pub")
    copy.chmod(0o600)
    subprocess.run(
        ["ssh-keygen", "-q", "-p", "-P", "", "-N", passphrase, "-f", str(copy)],
        check=True,
        capture_output=True,
    )
    return copy
