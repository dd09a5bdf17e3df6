"""The flags of a job's `docker run` / `podman run` that depend on the target: its GPUs
(`gpus`), the user the job runs as (`container_user`), and the init that passes a stop on to
the job (`--init` and the script around its commands)."""

from __future__ import annotations

from overbrainer.config.container import GPUS_ALL, GPUS_AUTO, GPUS_NONE, USER_AUTO, USER_IMAGE

GPU_PROBE = "nvidia-smi -L 2>/dev/null | grep -q '^GPU'"
"""Succeeds on a machine whose NVIDIA driver lists a GPU (the check `gpus = "auto"` runs there,
in the job's own shell, just before the container starts)."""

CONTAINER_HOME = "/tmp"
"""HOME in a container run as the target's user, which the image's passwd does not know (its
HOME would be `/`, where caches cannot be written)."""


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _all_gpus(docker: bool) -> str:
    return "--gpus all" if docker else "--device nvidia.com/gpu=all"


def gpu_flags(docker: bool, gpus: str) -> str:
    """The words that give the container (docker's, else podman's) the target's GPUs ('' for
    none).

    `auto` is decided on the target when the job starts: all its GPUs when `nvidia-smi` lists
    one, none otherwise (`--gpus` fails on a machine without the NVIDIA container toolkit).
    """
    if gpus == GPUS_NONE:
        return ""
    if gpus == GPUS_ALL:
        return _all_gpus(docker)
    if gpus == GPUS_AUTO:
        return f"$({GPU_PROBE} && echo {_quote(_all_gpus(docker))})"
    if docker:
        return "--gpus " + _quote('"device=' + gpus + '"')
    return " ".join(f"--device nvidia.com/gpu={index}" for index in gpus.split(","))


def user_flags(docker: bool, user: str) -> str:
    """The words that run the job (docker's, else podman's) as the target's user ('' for the
    image's own user), so the files it writes in the mounted run directory are that user's.

    `auto`: docker runs it as `$(id -u):$(id -g)` of the target's user; podman, whose rootless
    containers already map root to that user, keeps the user's ID (`--userns=keep-id`) unless
    it runs as root.
    """
    if user == USER_IMAGE:
        return ""
    home = f"-e HOME={CONTAINER_HOME}"
    if user != USER_AUTO:
        return f"--user {_quote(user)} {home}"
    if docker:
        return f'--user "$(id -u):$(id -g)" {home}'
    return f'$([ "$(id -u)" = 0 ] || echo --userns=keep-id) {home}'


INIT_FLAG = "--init"
"""A small init as the container's PID 1: a signal with no handler is not dropped there, and
the stop signal goes on to the job's shell."""


def stop_forwarding(script: str) -> str:
    """`script` run so that a stop ends it without a kill: the container's shell passes TERM
    (or INT) on to the job's whole process group and waits for it to end; the job's own shell
    waits for the command it runs before it exits 143, so no process is cut short by the
    container ending."""
    return (
        "trap 'trap \"\" TERM INT; kill -TERM 0 2>/dev/null; wait; exit 143' TERM INT; "
        f"( trap 'exit 143' TERM; {script}\n) & wait $!"
    )
