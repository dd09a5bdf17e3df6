"""The sh scripts a remote target runs for each operation (§4.2, §4.5): one place for their text."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from overbrainer.targets.executor import JobError
from overbrainer.targets.job_script import JOB_FILES, quote, wrap

_SECRET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def workdir_script(workdir: str) -> str:
    """Print `$HOME`, then create the workdir (relative to `$HOME` unless absolute) and print it."""
    return (
        "cd && printf '%s\\n' \"$HOME\" && "
        f"mkdir -p -- {quote(workdir)} && cd -- {quote(workdir)} && pwd -P"
    )


def claim_script(directory: str, owner: str) -> str:
    """Create `directory/.claim` exclusively (noclobber); print `claimed` or `taken`."""
    return (
        f"mkdir -p -- {quote(directory)} && cd -- {quote(directory)} || exit 1\n"
        f"if ( set -C; printf '%s\\n' {quote(owner)} > .claim ) 2>/dev/null; then echo claimed\n"
        f'elif [ "$(cat .claim 2>/dev/null)" = {quote(owner)} ]; then echo claimed\n'
        "else echo taken\n"
        "fi\n"
    )


def check_secrets(secrets: Mapping[str, str]) -> None:
    """Refuse a secret whose name or value cannot travel as one line of the job's stdin."""
    for name, value in secrets.items():
        if _SECRET_NAME.fullmatch(name) is None or any(c in value for c in "\n\r\0"):
            raise JobError(f"{name} cannot be passed to the job")


def secrets_input(secrets: Mapping[str, str]) -> bytes:
    """The launcher's stdin: each secret's value on a line of its own, in `secrets` order."""
    check_secrets(secrets)
    return "".join(f"{value}\n" for value in secrets.values()).encode()


def launcher(directory: str, commands: str, secret_names: Iterable[str]) -> str:
    """The launcher: read the secrets from stdin, start the wrapped job detached, print its PID."""
    reads = "".join(f"IFS= read -r {name} && export {name} && " for name in secret_names)
    return (
        f"{reads}mkdir -p -- {quote(directory)} && cd -- {quote(directory)} && "
        f"rm -f {' '.join(JOB_FILES)} && "
        f"{{ setsid nohup sh -c {quote(wrap(commands))} > job.log 2>&1 < /dev/null & }} && "
        'echo "$!"'
    )


def read_script(path: str, offset: int, limit: int) -> str:
    """Up to `limit` bytes of `path` from `offset`; nothing when it does not exist."""
    return (
        f"[ -f {quote(path)} ] || exit 0\n"
        f"tail -c +{offset + 1} -- {quote(path)} | head -c {limit}\n"
    )


def exists_script(path: str) -> str:
    """Print `yes` or `no`."""
    return f"if [ -e {quote(path)} ]; then echo yes; else echo no; fi"


def put_script(path: str) -> str:
    """Write stdin to `path` through a temporary file and a rename."""
    return f"cat > {quote(path + '.tmp')} && mv -f -- {quote(path + '.tmp')} {quote(path)}"


def upload_script(remote: str) -> str:
    """Unpack a tar stream from stdin into `remote`."""
    return f"mkdir -p -- {quote(remote)} && tar -C {quote(remote)} -xf -"


def download_script(remote: str, entries: Sequence[str], exclude: Sequence[str]) -> str:
    """A tar stream on stdout of the `entries` of `remote` that exist (an empty archive if none)."""
    listed = " ".join(quote(entry) for entry in entries)
    excludes = "".join(f" --exclude={quote(pattern)}" for pattern in exclude)
    return (
        f"cd -- {quote(remote)} || exit 1\n"
        "set --\n"
        f'for e in {listed}; do [ -e "$e" ] || [ -L "$e" ] && set -- "$@" "$e"; done\n'
        '[ "$#" -eq 0 ] && exec tar -cf - -T /dev/null\n'
        f'exec tar -C . -cf -{excludes} -- "$@"\n'
    )
