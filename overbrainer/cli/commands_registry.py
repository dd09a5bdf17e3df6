"""Imports every command module so that each adds its commands to the group."""

# One import per command module; each import adds its commands to the group.
from overbrainer.cli import (
    config_command,  # noqa: F401
    history_command,  # noqa: F401
    init_command,  # noqa: F401
    migrate_command,  # noqa: F401
    pod_command,  # noqa: F401
    runs_command,  # noqa: F401
    stage_commands,  # noqa: F401
    system_command,  # noqa: F401
    train_command,  # noqa: F401
    tui_command,  # noqa: F401
)
