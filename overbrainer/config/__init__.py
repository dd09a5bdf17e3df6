"""overbrainer.toml, the environment and .env turned into frozen settings."""
