"""The project handle and its single-writer lock, with real processes and signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from overbrainer.project.directory import (
    ProjectError,
    ProjectLocked,
    open_project,
    project_lock,
)

HOLDER = """
import signal, sys, time
from pathlib import Path
# A suite started in the background by a non-interactive shell inherits SIGINT ignored, and
# Python then installs no KeyboardInterrupt handler: this process must see the test's SIGINT.
signal.signal(signal.SIGINT, signal.default_int_handler)
from overbrainer.project.directory import open_project, project_lock
with project_lock(open_project(Path(sys.argv[1]))):
    try:
        print("locked", flush=True)  # inside the try: a SIGINT right after it is still seen
        time.sleep(60)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        raise
"""


def make_project(root: Path) -> Path:
    root.mkdir(exist_ok=True)
    (root / "overbrainer.toml").write_text('[project]\nname = "p"\n')
    return root


def start_holder(root: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "locked"
    return holder


def test_missing_config_is_named_and_nothing_is_created(tmp_path: Path) -> None:
    with pytest.raises(ProjectError) as caught:
        open_project(tmp_path)
    assert caught.value.message == (
        f"cannot read {tmp_path}/overbrainer.toml: No such file or directory; "
        f"{tmp_path} is not in an overbrainer project: make one with `overbrainer init {tmp_path}`"
    )
    assert list(tmp_path.iterdir()) == []


def test_newer_format_is_refused(tmp_path: Path) -> None:
    project = open_project(make_project(tmp_path))
    project.state.mkdir()
    project.version_file.write_text("2\n")
    with pytest.raises(ProjectError, match="uses format 2, newer than the format 1"):
        open_project(tmp_path)


def test_second_writer_fails_at_once_naming_the_holder(tmp_path: Path) -> None:
    project = open_project(make_project(tmp_path))
    holder = start_holder(tmp_path)
    try:
        started = time.monotonic()
        with pytest.raises(ProjectLocked) as caught, project_lock(project):
            pass
        assert time.monotonic() - started < 1.0
        assert caught.value.message == (
            f"another overbrainer (pid {holder.pid}) is using this project"
        )
    finally:
        holder.kill()
        holder.wait()


def test_lock_of_a_killed_process_is_taken_over(tmp_path: Path) -> None:
    project = open_project(make_project(tmp_path))
    holder = start_holder(tmp_path)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert project.lock_file.read_text() == str(holder.pid)
    with project_lock(project):
        assert project.lock_file.read_text() == str(os.getpid())


def test_lock_is_released_after_ctrl_c(tmp_path: Path) -> None:
    project = open_project(make_project(tmp_path))
    holder = start_holder(tmp_path)
    holder.send_signal(signal.SIGINT)
    out, _ = holder.communicate(timeout=10)
    assert "interrupted" in out
    assert holder.returncode != 0
    with project_lock(project):
        pass
    assert project.lock_file.read_text() == ""


def test_lock_is_released_when_the_body_raises(tmp_path: Path) -> None:
    project = open_project(make_project(tmp_path))
    with pytest.raises(RuntimeError), project_lock(project):
        raise RuntimeError("boom")
    with project_lock(project):
        pass


def test_symlinked_lock_file_is_refused(tmp_path: Path) -> None:
    project = open_project(make_project(tmp_path))
    project.state.mkdir()
    (tmp_path / "elsewhere").write_text("")
    project.lock_file.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ProjectError, match="it is a symbolic link"), project_lock(project):
        pass
