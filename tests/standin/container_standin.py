"""A stand-in `docker` / `podman` for the tests: no engine, no image, the command run natively.

It follows the docker CLI only as overbrainer's job scripts use it (a documented
approximation, not an emulation of containers):

- `run --rm --name N [flags] IMAGE CMD...`: `-e K=V` / `-e K` (from this environment),
  `-v HOST:CONTAINER[:opts]` and `-w DIR` are read; `--gpus`, `--ulimit`, `--device`,
  `--security-opt`, `--ipc=...` and other `--flag=value` words are accepted and ignored, as is
  IMAGE. CMD runs natively in a new session (the "container"), with each container path prefix
  of a mount rewritten to its host path in CMD's arguments, the working directory and the `-e`
  values. Its environment is the `-e` variables over this one's PATH, HOME, LANG, TMPDIR and
  STANDIN_* test knobs (the image's own environment stands for the rest). TERM, INT and HUP
  sent to this client are passed to the container's process group (docker's sig-proxy). The
  client exits with CMD's code (128 + N when signal N ended it), and a second container of the
  same name is refused with exit 125, as docker does.
- `--init` and `--user U` (`--userns=...` too) are accepted; `--user` is ignored (the
  command runs as this user), `--init` changes what `stop` does.
- `stop [-t S] N...`: TERM to the container's PID 1 as docker does, then KILL to its process
  group after S seconds (10), which is appended as `N` to `$STANDIN_CONTAINER_STATE/kills`.
  With `--init`, PID 1 is an init that passes TERM on to the command; without it the command
  is PID 1 itself, where the kernel drops a signal it has no handler for (read from
  `/proc/PID/status`).
- `kill [-s SIG] N...`: SIG (KILL) to the group. `rm -f N...`: KILL and forget the name.

Every call is appended as `{"engine", "argv"}` to `$STANDIN_CONTAINER_STATE/calls.jsonl`;
`containers/<name>` holds the PID of each running container.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

KEPT = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")
VALUED = {
    "--name",
    "-e",
    "--env",
    "-v",
    "--volume",
    "-w",
    "--workdir",
    "--gpus",
    "--ulimit",
    "--device",
    "--security-opt",
    "--ipc",
    "--user",
}


def state() -> Path:
    folder = Path(os.environ["STANDIN_CONTAINER_STATE"])
    (folder / "containers").mkdir(parents=True, exist_ok=True)
    return folder


def log_call(engine: str, argv: list[str]) -> None:
    line = json.dumps({"engine": engine, "argv": argv}) + "\n"
    fd = os.open(state() / "calls.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def fail(message: str, code: int) -> int:
    print(f"Error response from daemon: {message}", file=sys.stderr)
    return code


def rewriter(mounts: list[tuple[str, str]]) -> re.Pattern[str] | None:
    if not mounts:
        return None
    inside = sorted((c for c, _ in mounts), key=len, reverse=True)
    alternatives = "|".join(re.escape(c.rstrip("/")) for c in inside)
    return re.compile(rf"(?<![\w./-])({alternatives})(?![\w.-])")


def run(engine: str, args: list[str]) -> int:
    name: str | None = None
    env: dict[str, str] = {}
    mounts: list[tuple[str, str]] = []
    workdir: str | None = None
    init = False
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--rm":
            i += 1
            continue
        if word == "--init":
            init = True
            i += 1
            continue
        if word.startswith("--") and "=" in word:
            i += 1
            continue
        if word in VALUED:
            if i + 1 >= len(args):
                return fail(f"flag needs an argument: {word}", 125)
            value = args[i + 1]
            i += 2
            if word == "--name":
                name = value
            elif word in ("-e", "--env"):
                key, sep, val = value.partition("=")
                if sep:
                    env[key] = val
                elif key in os.environ:
                    env[key] = os.environ[key]
            elif word in ("-v", "--volume"):
                parts = value.split(":")
                if len(parts) < 2 or not parts[0].startswith("/") or not parts[1].startswith("/"):
                    return fail(f"invalid volume specification: {value!r}", 125)
                Path(parts[0]).mkdir(parents=True, exist_ok=True)
                mounts.append((parts[1], parts[0]))
            elif word in ("-w", "--workdir"):
                workdir = value
            continue
        if word.startswith("-"):
            return fail(f"unknown flag: {word}", 125)
        break
    command = args[i + 1 :]
    if i >= len(args) or not command:
        return fail("run needs an image and a command", 125)
    if name is None:
        return fail("this stand-in needs --name", 125)
    pattern = rewriter(mounts)
    hosts = {c.rstrip("/"): h.rstrip("/") for c, h in mounts}

    def host(text: str) -> str:
        return text if pattern is None else pattern.sub(lambda m: hosts[m.group(1)], text)

    child_env = {k: os.environ[k] for k in KEPT if k in os.environ}
    child_env.update({k: v for k, v in os.environ.items() if k.startswith("STANDIN_")})
    child_env.update({k: host(v) for k, v in env.items()})
    entry = state() / "containers" / name
    try:
        fd = os.open(entry, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return fail(f'Conflict. The container name "/{name}" is already in use', 125)
    try:
        process = subprocess.Popen(
            [host(word) for word in command],
            cwd=host(workdir) if workdir else None,
            env=child_env,
            start_new_session=True,
        )
        os.write(fd, str(process.pid).encode())
        os.close(fd)
        if init:
            (inits() / name).touch()

        def proxy(signum: int, _frame: object) -> None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signum)

        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, proxy)
        code = process.wait()
    finally:
        entry.unlink(missing_ok=True)
        (inits() / name).unlink(missing_ok=True)
    return 128 - code if code < 0 else code


def inits() -> Path:
    """Where a container started with `--init` is named (outside `containers/`)."""
    folder = state() / "inits"
    folder.mkdir(exist_ok=True)
    return folder


def catches(pid: int, signum: int) -> bool:
    """Whether process `pid` has a handler for `signum`."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next(
        (line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), "0"
    )
    return bool(int(mask, 16) >> (signum - 1) & 1)


def stop_named(names: list[str], grace: float) -> int:
    """`stop`: TERM to each container's PID 1 (see the module's text), KILL after `grace`."""
    code = 0
    for name in names:
        pid = container_pid(name)
        if pid is None:
            code = fail(f"No such container: {name}", 1)
            continue
        if (inits() / name).exists() or catches(pid, signal.SIGTERM):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            with open(state() / "kills", "a") as kills:
                kills.write(name + "\n")
        print(name)
    return code


def container_pid(name: str) -> int | None:
    try:
        return int((state() / "containers" / name).read_text())
    except (OSError, ValueError):
        return None


def alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def signal_named(names: list[str], signum: int) -> int:
    code = 0
    for name in names:
        pid = container_pid(name)
        if pid is None:
            code = fail(f"No such container: {name}", 1)
            continue
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signum)
        print(name)
    return code


def main(argv: list[str]) -> int:
    engine, args = argv[1], argv[2:]  # the wrapper names its engine first
    log_call(engine, args)
    match args:
        case ["run", *rest]:
            return run(engine, rest)
        case ["stop", "-t", seconds, *names] if names:
            return stop_named(names, float(seconds))
        case ["stop", *names] if names:
            return stop_named(names, 10.0)
        case ["kill", "-s", name, *names] if names:
            return signal_named(names, getattr(signal, "SIG" + name.removeprefix("SIG")))
        case ["kill", *names] if names:
            return signal_named(names, signal.SIGKILL)
        case ["rm", "-f", *names] if names:
            for name in names:
                pid = container_pid(name)
                if pid is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(pid, signal.SIGKILL)
                    (state() / "containers" / name).unlink(missing_ok=True)
                print(name)
            return 0
        case _:
            return fail(f"this stand-in does not implement {' '.join(args[:1])!r}", 125)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
