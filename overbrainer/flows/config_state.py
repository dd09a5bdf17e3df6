"""The settings a command runs with, reloaded by `run` between stages when the files changed."""

from __future__ import annotations

import logging
import os

from overbrainer.config import load_settings
from overbrainer.config.settings import Settings
from overbrainer.model.errors import OverbrainerError, UsageError
from overbrainer.project.directory import Project
from overbrainer.storage import Stamp as FileStamp
from overbrainer.storage import file_stamp

log = logging.getLogger(__name__)

Stamp = tuple[FileStamp | None, FileStamp | None]


class ConfigState:
    """The settings a command runs with, and what `run` needs to reload them between stages."""

    def __init__(self, project: Project) -> None:
        self.project = project
        # The shell's environment, before `.env` added to it: a reload starts from it again.
        self.shell_env = dict(os.environ)
        self.stamp = self._stamp()
        # `.env` is read into the process once, here, for what reads the process environment
        # (a local job's, the secret look-ups of training); a reload changes only `env`.
        self.settings: Settings = load_settings(project.root, os.environ)
        self.env: dict[str, str] = dict(os.environ)
        """The environment the settings were loaded from: the shell's, then `.env`."""

    def _stamp(self) -> Stamp:
        return file_stamp(self.project.config), file_stamp(self.project.env_file)

    def reload_if_changed(self) -> bool:
        """Re-read `overbrainer.toml` and `.env` when either changed; True when it did."""
        stamp = self._stamp()
        if stamp == self.stamp:
            return False
        env = dict(self.shell_env)
        try:
            settings = load_settings(self.project.root, env)
        except OverbrainerError as error:
            raise UsageError(
                f"the configuration changed and cannot be used; the run stops: {error.message}"
            ) from None
        self.stamp, self.settings, self.env = stamp, settings, env
        log.info("config reloaded")
        return True
