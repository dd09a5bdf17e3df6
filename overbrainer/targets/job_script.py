"""The POSIX sh text of a detached job: its wrapper, command chain, status and cancel scripts."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence

import attrs

from overbrainer.config.container import GPUS_AUTO, USER_AUTO
from overbrainer.model.job_status import Cancelled, Exited, JobStatus, Lost, Running
from overbrainer.model.train_metric import JobStage
from overbrainer.targets.container_flags import INIT_FLAG, gpu_flags, stop_forwarding, user_flags

JOB_FILES = ("exit_code", "cancelling", "cancelled", "job.pid")
"""Files of an earlier start that a new start removes first."""
CANCEL_GRACE_S = 10
"""Seconds between TERM and KILL, and after KILL before the cancel gives up."""
CONTAINER_STOP_S = 30


class JobScriptError(ValueError):
    """A job cannot be written as a script (a refused PID, a secret that cannot be passed)."""


def quote(text: str) -> str:
    """`text` single-quoted for sh, so nothing in it is expanded."""
    return "'" + text.replace("'", "'\\''") + "'"


def wrap(commands: str) -> str:
    """The wrapper that records `job.pid` first and `exit_code` last around `commands`."""
    return (
        "echo $$ > job.pid.tmp && mv -f job.pid.tmp job.pid\n"
        "(\n"
        f"{commands}\n"
        ")\n"
        "code=$?\n"
        'echo "$code" > exit_code.tmp && mv -f exit_code.tmp exit_code\n'
        'exit "$code"\n'
    )


def stage_line(stage: JobStage, metrics: str = "metrics.jsonl") -> str:
    """The shell step that appends a `stage` line before a command; it never fails the chain."""
    return (
        '{ printf \'{"event":"stage","name":"%s","time":%s}\\n\' '
        f'{stage.value} "$(date +%s)" >> {quote(metrics)} || :; }}'
    )


@attrs.frozen
class Command:
    """One program of a job, announced by its stage line."""

    stage: JobStage
    program: str
    args: tuple[str, ...] = ()
    from_venv: bool = True
    """False for a system program (`sh`) that a venv does not hold."""
    failure_file: str | None = None
    """Where the program's exit status goes when it fails, instead of failing the chain: a step
    whose failure is its own, not the job's (the export after training)."""

    def text(self, venv: str | None = None) -> str:
        """The stage line then the program, from `venv/bin` when a venv is given."""
        program = self.program
        if venv and self.from_venv:
            program = f"{venv.rstrip('/')}/bin/{self.program}"
        words = " ".join([quote(program), *(quote(arg) for arg in self.args)])
        step = f"{stage_line(self.stage)} && {words}"
        if self.failure_file is None:
            return step
        return f'{{ {step} || {{ echo "$?" > {quote(self.failure_file)} || :; }}; }}'


def chain(commands: Sequence[Command], venv: str | None = None) -> str:
    """Commands joined by `&&`; those after the first stage's are skipped once a snapshot proof
    exists (the first stage may hold several commands: `axolotl preprocess`, `axolotl train`)."""
    if not commands:
        raise JobScriptError("a job needs at least one command")
    lead = 1
    while lead < len(commands) and commands[lead].stage is commands[0].stage:
        lead += 1
    first = " && ".join(command.text(venv) for command in commands[:lead])
    rest = [command.text(venv) for command in commands[lead:]]
    if not rest:
        return first
    return f"{first} && {{ [ -f 'snapshot.json' ] || {{ {' && '.join(rest)}; }}; }}"


PREPENDED = frozenset({"PYTHONPATH", "PATH"})
"""Variables whose value is put before the inherited one rather than replacing it."""


def exports(env: Mapping[str, str]) -> str:
    """`export K='V'` steps joined by `&&` (PYTHONPATH, PATH keep the inherited value after)."""

    def step(name: str, value: str) -> str:
        if name in PREPENDED:
            return f'export {name}={quote(value)}"${{{name}:+:${name}}}"'
        return f"export {name}={quote(value)}"

    return " && ".join(step(name, value) for name, value in env.items())


def native_commands(
    commands: Sequence[Command],
    env: Mapping[str, str],
    *,
    venv: str | None = None,
    env_file: str | None = None,
) -> str:
    """The native runtime: `[. 'envfile' &&] export K='V' … && <chain>`.

    With a venv, its `bin/` goes first on PATH: Axolotl launches `accelerate` and other
    entry points of its own environment by name.
    """
    steps = []
    if env_file:
        steps.append(f". {quote(env_file)}")
    if venv and "PATH" not in env:
        env = {**env, "PATH": f"{venv.rstrip('/')}/bin"}
    if env:
        steps.append(exports(env))
    steps.append(chain(commands, venv))
    return " && ".join(steps)


class Engine(enum.Enum):
    """A container engine."""

    DOCKER = "docker"
    PODMAN = "podman"


_ENGINE_FLAGS = {
    Engine.DOCKER: "--ulimit memlock=-1 --ulimit stack=67108864",
    Engine.PODMAN: "--security-opt=label=disable --ulimit host",
}
_RUN_LABEL = {Engine.DOCKER: "", Engine.PODMAN: ":Z"}
_CACHE_LABEL = {Engine.DOCKER: "", Engine.PODMAN: ":z"}


def container_name(run_id: str) -> str:
    """The container name of a run's job."""
    return f"overbrainer-{run_id}"


@attrs.frozen
class ContainerJob:
    """A job in a container: its engine and image, the run directory and caches it mounts,
    its commands and variables (`secrets` by name only), and `workdir` below the run directory."""

    engine: Engine
    run_id: str
    run_dir: str
    cache: str
    image: str
    commands: Sequence[Command]
    env: Mapping[str, str]
    secrets: Sequence[str] = ()
    tools: str | None = None
    workdir: str = ""
    gpus: str = GPUS_AUTO
    """The target's `gpus`: `auto`, `all`, `none` or indices (`0,1`)."""
    user: str = USER_AUTO
    """The target's `container_user`: `auto` (the target's user), `image`, or a user."""


def container_commands(job: ContainerJob) -> str:
    """The container runtime: `mkdir -p` of the caches, then `<engine> run … sh -c '<chain>'`.

    The job runs in `/workspace/run` (the mounted `run_dir`), or in `workdir` below it.
    """
    engine, run_id, run_dir, cache, tools = (
        job.engine,
        job.run_id,
        job.run_dir,
        job.cache,
        job.tools,
    )
    image, commands, env, secrets, workdir = (
        job.image,
        job.commands,
        job.env,
        job.secrets,
        job.workdir,
    )
    made = [quote(cache)] + ([quote(tools)] if tools else [])
    docker = engine is Engine.DOCKER
    words = [
        f"{engine.value} run --rm --name {quote(container_name(run_id))} {INIT_FLAG}",
        *(flags for flags in (gpu_flags(docker, job.gpus), user_flags(docker, job.user)) if flags),
        _ENGINE_FLAGS[engine],
        "--ipc=host",
        f"-v {quote(f'{run_dir}:/workspace/run{_RUN_LABEL[engine]}')}",
        f"-v {quote(f'{cache}:/workspace/hf-cache{_CACHE_LABEL[engine]}')}",
    ]
    if tools:
        words.append(f"-v {quote(f'{tools}:/workspace/cache{_CACHE_LABEL[engine]}')}")
        words.append("-e OVERBRAINER_CACHE=/workspace/cache")
    below = workdir.strip("/")
    words.append(f"-w {quote(f'/workspace/run/{below}') if below else '/workspace/run'}")
    words.append("-e HF_HOME=/workspace/hf-cache")
    words.extend(f"-e {quote(f'{name}={value}')}" for name, value in env.items())
    words.extend(f"-e {quote(name)}" for name in secrets)
    words.append(f"{quote(image)} sh -c {quote(stop_forwarding(chain(commands)))}")
    return f"mkdir -p -- {' '.join(made)} && {' '.join(words)}"


def remove_script(container: tuple[Engine, str]) -> str:
    """The script that force-removes a job's container; one already gone is no error."""
    engine, name = container
    return f"{engine.value} rm -f {quote(name)} >/dev/null 2>&1 || :"


def _check_pid(pid: int) -> None:
    if pid <= 1:
        raise JobScriptError(f"refusing job PID {pid}")


def status_script(run_dir: str, pid: int) -> str:
    """The script that prints one word: running, cancelled, `exited <code>` or lost."""
    _check_pid(pid)
    return (
        f"cd -- {quote(run_dir)} 2>/dev/null || {{ echo lost; exit 0; }}\n"
        f"if kill -s 0 -- -{pid} 2>/dev/null; then alive=1; else alive=0; fi\n"
        "if [ -f cancelled ]; then echo cancelled\n"
        "elif [ -f cancelling ]; then\n"
        '  if [ "$alive" = 1 ]; then echo running; else echo cancelled; fi\n'
        'elif [ -f exit_code ]; then echo "exited $(cat exit_code)"\n'
        'elif [ "$alive" = 1 ]; then echo running\n'
        "else echo lost\n"
        "fi\n"
    )


def parse_status(output: str) -> JobStatus:
    """The status a status script printed; anything unexpected reads as lost."""
    words = output.split()
    match words:
        case ["running"]:
            return Running()
        case ["cancelled"]:
            return Cancelled()
        case ["exited", code] if code.lstrip("-").isdigit():
            return Exited(int(code))
        case _:
            return Lost()


def cancel_script(run_dir: str, pid: int, container: tuple[Engine, str] | None = None) -> str:
    """The script that stops a job's process group: TERM, then KILL after 10 s, then `cancelled`."""
    _check_pid(pid)
    group = f"-{pid}"
    stop = ""
    if container is not None:
        engine, name = container
        stop = f"{engine.value} stop -t {CONTAINER_STOP_S} {quote(name)} >/dev/null 2>&1 || :\n"
    return (
        f"cd -- {quote(run_dir)} || exit 1\n"
        "if [ -f exit_code ] || [ -f cancelled ]; then exit 0; fi\n"
        ": > cancelling.tmp && mv -f cancelling.tmp cancelling || exit 1\n"
        f"{stop}"
        f"kill -s TERM -- {group} 2>/dev/null || :\n"
        "n=0\n"
        f'while kill -s 0 -- {group} 2>/dev/null && [ "$n" -lt {CANCEL_GRACE_S * 10} ]; do\n'
        "  sleep 0.1; n=$((n + 1))\n"
        "done\n"
        f"kill -s KILL -- {group} 2>/dev/null || :\n"
        "n=0\n"
        f"while kill -s 0 -- {group} 2>/dev/null; do\n"
        f'  if [ "$n" -ge {CANCEL_GRACE_S * 10} ]; then\n'
        f"    echo 'process group {pid} is still present after SIGKILL (its leader may be waiting"
        " for its parent process to reap it); the job stays marked cancelling, retry the cancel'"
        " >&2\n"
        "    exit 1\n"
        "  fi\n"
        "  sleep 0.1; n=$((n + 1))\n"
        "done\n"
        ": > cancelled\n"
    )
