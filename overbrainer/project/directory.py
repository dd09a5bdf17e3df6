"""A project directory: its paths, its format version and the single-writer lock."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shlex
from collections.abc import Iterator
from pathlib import Path

import attrs

from overbrainer.model.errors import OverbrainerError, UsageError
from overbrainer.storage import space_for

FORMAT_VERSION = 1
"""The project format this overbrainer reads and writes."""

CONFIG_FILE = "overbrainer.toml"
STATE_DIR = ".overbrainer"

PREDATES_HINT = (
    "this project predates the project format of overbrainer 0.4.0 (format 1):"
    " run overbrainer migrate"
)
"""What every command but `init` and `migrate` ends with on a project without a version file.

The reference's hint reads `predates overbrainer 0.4.0`; "0.4.0" is the reference tool's
release that introduced the version file, not this package's version, so the hint says so.
"""


class ProjectError(UsageError):
    """The directory is not a usable project (missing config, newer format, bad state dir)."""


class ProjectLocked(OverbrainerError):
    """Another overbrainer process holds the project's lock."""

    exit_code = 2


@attrs.frozen
class Project:
    """The paths of one project directory."""

    root: Path

    @property
    def config(self) -> Path:
        """`overbrainer.toml`."""
        return self.root / CONFIG_FILE

    @property
    def env_file(self) -> Path:
        """The optional `.env`."""
        return self.root / ".env"

    @property
    def prompts(self) -> Path:
        """Prompt template overrides."""
        return self.root / "prompts"

    @property
    def data(self) -> Path:
        """The dataset files."""
        return self.root / "data"

    def data_file(self, name: str) -> Path:
        """`data/<name>.jsonl`, e.g. `data_file("answers")`."""
        return self.data / f"{name}.jsonl"

    @property
    def state(self) -> Path:
        """`.overbrainer/`."""
        return self.root / STATE_DIR

    @property
    def version_file(self) -> Path:
        """`.overbrainer/version`."""
        return self.state / "version"

    @property
    def history(self) -> Path:
        """`.overbrainer/history.jsonl`."""
        return self.state / "history.jsonl"

    def force_state(self, name: str) -> Path:
        """`.overbrainer/force-<name>.json`: an unfinished `--force` of `data/<name>.jsonl`."""
        return self.state / f"force-{name}.json"

    @property
    def lock_file(self) -> Path:
        """`.overbrainer/lock`."""
        return self.state / "lock"

    @property
    def runs(self) -> Path:
        """Training runs."""
        return self.root / "runs"

    def format_version(self) -> int | None:
        """The format number in `.overbrainer/version`, or None when there is no such file."""
        try:
            text = self.version_file.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        except OSError as error:
            raise ProjectError(f"cannot read {self.version_file}: {error.strerror}") from None
        try:
            return int(text)
        except ValueError:
            raise ProjectError(f"{self.version_file} does not hold a format number") from None


def find_root(start: Path) -> Path:
    """The project holding `start`, found as git finds a repository; `start` when none does.

    `start` itself when it holds `overbrainer.toml` (kept as given, so messages show the path
    the user typed), else the nearest parent that does (absolute), else `start` unchanged.
    A `start` that is not a directory is not searched from (as `git -C` cannot go there).
    """
    if _has_config(start):
        return start
    try:
        if not start.is_dir():
            return start
        resolved = start.resolve()
    except (OSError, RuntimeError):
        return start
    for parent in resolved.parents:
        if _has_config(parent):
            return parent
    return start


def _has_config(directory: Path) -> bool:
    try:
        return (directory / CONFIG_FILE).is_file()
    except OSError:
        return False


def predates_versions(start: Path) -> bool:
    """Whether the project holding `start` was made before the version file."""
    project = Project(find_root(start))
    try:
        return project.config.is_file() and not os.path.lexists(project.version_file)
    except OSError:
        return False


def open_project(start: Path) -> Project:
    """The project holding `start` (see `find_root`); fails when there is none or it is too new."""
    project = Project(find_root(start))
    if not project.config.is_file():
        # The reference's wording («cannot read …: <io error>»), plus what to do about it.
        raise ProjectError(
            f"cannot read {project.config}: No such file or directory; {_no_project(start)}"
        )
    version = project.format_version()
    if version is not None and version > FORMAT_VERSION:
        raise ProjectError(
            f"this project uses format {version}, newer than the format {FORMAT_VERSION} "
            "this overbrainer knows: upgrade overbrainer"
        )
    return project


def _no_project(start: Path) -> str:
    """Why `start` holds no project and the `init` that makes one there, path included."""
    here = start == Path(".")
    init = "overbrainer init" if here else f"overbrainer init {shlex.quote(str(start))}"
    if not os.path.lexists(start):
        return f"{start} does not exist: make a project there with `{init}`"
    where = "this directory" if here else str(start)
    return f"{where} is not in an overbrainer project: make one with `{init}`"


def _refuse_links(path: Path) -> None:
    # The reference says «symbolic link» for a hard-linked file too; its literal is kept.
    refused = ProjectError(f"refusing to use {path}: it is a symbolic link")
    if path.is_symlink():
        raise refused
    with contextlib.suppress(FileNotFoundError):
        if path.is_file() and path.stat().st_nlink > 1:
            raise refused


def _holder(lock_file: Path) -> str:
    try:
        text = lock_file.read_text(encoding="utf-8").strip()
    except OSError:
        return "unknown pid"
    return f"pid {text}" if text.isdigit() else "unknown pid"


@contextlib.contextmanager
def project_lock(project: Project) -> Iterator[None]:
    """Hold the project's exclusive lock; the OS frees it when this process exits, crash or not."""
    _refuse_links(project.state)
    _refuse_links(project.lock_file)
    try:
        project.state.mkdir(exist_ok=True)
        fd = os.open(
            project.lock_file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644
        )
    except OSError as error:
        raise ProjectError(f"cannot lock {project.lock_file}: {error.strerror}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno in (errno.EWOULDBLOCK, errno.EACCES):
                raise ProjectLocked(
                    f"another overbrainer ({_holder(project.lock_file)}) is using this project"
                ) from None
            raise ProjectError(f"cannot lock {project.lock_file}: {error.strerror}") from None
        with space_for(project.lock_file, "lock"):
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
