"""overbrainer.toml, the environment and .env turned into frozen settings."""

from overbrainer.config.errors import ConfigError
from overbrainer.config.load import load_settings

__all__ = ["ConfigError", "load_settings"]
