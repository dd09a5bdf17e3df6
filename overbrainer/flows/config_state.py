"""The settings a command runs with, reloaded by `run` between stages when the files changed."""

from __future__ import annotations

import logging
import os

from overbrainer.config import load_settings
from overbrainer.config.settings import Settings
from overbrainer.model.errors import OverbrainerError, UsageError
from overbrainer.project.directory import Project
from overbrainer.storage.jsonl import Stamp as FileStamp
from overbrainer.storage.jsonl import file_stamp

log = logging.getLogger(__name__)

Stamp = tuple[FileStamp | None, FileStamp | None]


class ConfigState:
    """The settings a command runs with, and what `run` needs to reload them between stages."""

    def __init__(self, project: Project) -> None:
        self.project = project
        # The shell's environment, before `.env` added to it: a reload starts from it again.
        self.shell_env = dict(os.environ)
        self.stamp = self._stamp()
        self.env = os.environ
        self.settings: Settings = load_settings(project.root, self.env)

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
        for key in set(os.environ) - set(env):
            del os.environ[key]
        os.environ.update(env)
        self.stamp, self.settings = stamp, settings
        log.info("config reloaded")
        return True
