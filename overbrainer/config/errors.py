"""The configuration's error: one message naming keys, never values; exit code 2."""

from __future__ import annotations

from collections.abc import Sequence

from overbrainer.model.errors import EXIT_USAGE, OverbrainerError


class ConfigError(OverbrainerError):
    """`overbrainer.toml`, `.env` or the environment cannot be loaded or is invalid."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems = tuple(problems)

    @classmethod
    def invalid(cls, problems: Sequence[str]) -> ConfigError:
        """`invalid configuration:` then one problem per line, indented by two spaces."""
        lines = "".join(f"\n  {problem}" for problem in problems)
        return cls(f"invalid configuration:{lines}", problems)

    @classmethod
    def parse(cls, problems: Sequence[str]) -> ConfigError:
        """A parse error: one on the same line, several one per line."""
        if len(problems) == 1:
            return cls(f"invalid configuration: {problems[0]}", problems)
        return cls.invalid(problems)
