"""Why the OpenSSH client could not connect, in one line a user can act on.

OpenSSH's own words are kept (the first lines of its stderr) except where they are long or
leave the cause out: a changed host key (a 15-line banner) becomes one line naming the host and
the known_hosts file, and a refused public key names the key files that do not exist.
"""

from __future__ import annotations

import os
import re
import subprocess

import trio

from overbrainer.targets.ssh_session import stderr_text

CHANGED = "REMOTE HOST IDENTIFICATION HAS CHANGED"
CONFIG_TIMEOUT_S = 10.0


def changed_host_key(text: str) -> str | None:
    """One line for OpenSSH's changed-host-key banner; None when `text` is not one."""
    if CHANGED not in text:
        return None
    host = re.search(r"Host key for (\S+) has changed", text)
    stored = re.search(r"Offending \S+ key in (.+):(\d+)\s*$", text, re.MULTILINE)
    name = host[1] if host else "the host"
    where = f"{stored[1]} (line {stored[2]})" if stored else "known_hosts"
    remove = f"`ssh-keygen -f {stored[1]} -R {name}`" if stored else "`ssh-keygen -R`"
    return (
        f"the host key of {name} has changed since {where} stored it: if the host was "
        f"reinstalled, remove the old key with {remove}; if not, someone may be intercepting "
        "the connection"
    )


def identity_files(resolved: str) -> list[str]:
    """The `identityfile` lines of `ssh -G` output, `~` expanded."""
    found = re.findall(r"^identityfile (.+)$", resolved, re.MULTILINE)
    return [os.path.expanduser(path.strip()) for path in found]


async def missing_key_files(host: str, config: str | None) -> list[str]:
    """The key files ssh would offer to `host` when none of them exists; [] otherwise."""
    options = ["-F", config] if config else []
    done: subprocess.CompletedProcess[bytes] | None = None
    with trio.move_on_after(CONFIG_TIMEOUT_S):
        done = await trio.run_process(
            ["ssh", "-G", *options, "--", host],
            check=False,
            stdin=subprocess.DEVNULL,
            capture_stdout=True,
            capture_stderr=True,
        )
    if done is None or done.returncode != 0:
        return []
    files = identity_files(done.stdout.decode("utf-8", "replace"))
    exist = await trio.to_thread.run_sync(lambda: [os.path.exists(path) for path in files])
    return [] if any(exist) else files


async def explain(raw: bytes, host: str, config: str | None) -> str:
    """The reason a connection to `host` failed, from the client's stderr, in one line."""
    text = raw.decode("utf-8", "replace")
    changed = changed_host_key(text)
    if changed is not None:
        return changed
    why = stderr_text(raw)
    if "Permission denied" in text and "publickey" in text:
        missing = await missing_key_files(host, config)
        if len(missing) == 1:
            return f"{why.rstrip('.')}: the key file {missing[0]} does not exist"
        if missing:
            return (
                f"{why.rstrip('.')}: none of the key files ssh offers exists ({', '.join(missing)})"
            )
    return why or "no answer"
