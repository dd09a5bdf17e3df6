"""`.env` loading and the `OVERBRAINER_<PATH>` overlay onto the file's tables."""

from __future__ import annotations

import io
from collections.abc import Mapping, MutableMapping
from pathlib import Path

from dotenv.parser import parse_stream

from overbrainer.config.errors import ConfigError
from overbrainer.model.text import decode_utf8

PREFIX = "OVERBRAINER_"
# Read elsewhere, so not config keys (OVERBRAINER_LOG maps onto the `log` key instead).
EXEMPT = frozenset(
    {
        "OVERBRAINER_NO_UPDATE_CHECK",
        "OVERBRAINER_TUI_COLOR",
        "OVERBRAINER_TUI_MOTION",
        "OVERBRAINER_CACHE",
        "OVERBRAINER_COMPARE_KFD",
    }
)
EXEMPT_PREFIXES = ("OVERBRAINER_TEST_", "OVERBRAINER_LLAMA_CPP")
"""OVERBRAINER_LLAMA_CPP*: the llama.cpp pin's overrides (targets/llama_cpp.py), not config keys."""
SSH_CLIENT_ENV = "OVERBRAINER_SSH_CLIENT"
SSH_CONFIG_ENV = "OVERBRAINER_SSH_CONFIG"
"""An ssh_config file every `ssh` of overbrainer reads instead of `~/.ssh/config` (`ssh -F`)."""


class EnvStr(str):
    """A value that came from the environment: numbers and bools may be parsed from it."""

    __slots__ = ()


def _spaced_unquoted(line: str) -> bool:
    """Whether the entry's unquoted value goes on after a space (`K=two words`).

    python-dotenv keeps such a value whole; the reference's dotenv ends an unquoted value at
    a space and refuses anything but a `#` comment after it, so the same `.env` works in both
    only if we refuse it too. Quotes and `\\ ` escapes are read as it reads them.
    """
    value = line.partition("=")[2].lstrip(" \t").rstrip("\r\n")
    quote = ""
    escaped = ended = False
    for char in value:
        if ended:
            if char in " \t":
                continue
            return char != "#"
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in " \t":
            ended = True
    return False


def load_dotenv(project_dir: Path, environ: MutableMapping[str, str]) -> list[str]:
    """Put `.env` entries into `environ` without overriding it; return the keys it added.

    A leading BOM is ignored; a repeated key keeps its first entry. Errors never quote content.
    """
    path = project_dir / ".env"
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as error:
        raise ConfigError(f"cannot read .env: {error.strerror}") from None
    text = decode_utf8(raw, str(path)).removeprefix("\ufeff")
    entries: dict[str, str] = {}
    for binding in parse_stream(io.StringIO(text)):
        # A line without `=` is refused too: it is most often a pasted secret.
        if (
            binding.error
            or (binding.key is not None and binding.value is None)
            or (binding.key is not None and _spaced_unquoted(binding.original.string))
        ):
            raise ConfigError(f"cannot parse .env (syntax error at line {binding.original.line})")
        if binding.key is None or binding.key in entries or binding.value is None:
            continue
        entries[binding.key] = binding.value
    added = [key for key in entries if key not in environ]
    for key in added:
        environ[key] = entries[key]
    return added


def is_config_var(name: str) -> bool:
    """Whether an environment variable is meant as a config key (`OVERBRAINER_*`, not exempt)."""
    if not name.startswith(PREFIX) or name in EXEMPT or name in (SSH_CLIENT_ENV, SSH_CONFIG_ENV):
        return False
    return not name.startswith(EXEMPT_PREFIXES)


def env_paths(environ: Mapping[str, str]) -> dict[tuple[str, ...], EnvStr]:
    """The config key paths the environment sets: `OVERBRAINER_A__B` -> (`a`, `b`)."""
    paths: dict[tuple[str, ...], EnvStr] = {}
    for name in sorted(environ):
        if not is_config_var(name):
            continue
        path = tuple(name[len(PREFIX) :].lower().split("__"))
        paths[path] = EnvStr(environ[name])
    return paths


def overlay(table: dict[str, object], paths: Mapping[tuple[str, ...], EnvStr]) -> None:
    """Set each path's value into `table`, creating tables on the way (env wins)."""
    for path, value in paths.items():
        node = table
        for part in path[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[path[-1]] = value


NAMED_SECTIONS = {"targets": ("target", "kind"), "providers": ("provider", "protocol")}
"""Tables of named entries an environment variable may only add keys to: (noun, required key)."""


def undeclared_entries(
    table: Mapping[str, object], paths: Mapping[tuple[str, ...], object]
) -> list[str]:
    """One problem per variable that sets a key of a target or provider the file lacks."""
    problems: list[str] = []
    for path in paths:
        if len(path) < 3 or path[0] not in NAMED_SECTIONS:
            continue
        section, name = path[0], path[1]
        entries = table.get(section)
        if isinstance(entries, dict) and isinstance(entries.get(name), dict):
            continue
        if (section, name, NAMED_SECTIONS[section][1]) in paths:
            continue  # the environment declares the whole entry itself
        noun, required = NAMED_SECTIONS[section]
        variable = PREFIX + "__".join(path).upper()
        problems.append(
            f"{variable} sets `{'.'.join(path)}`, but {noun} `{name}` is not in overbrainer.toml:"
            f" add a [{section}.{name}] table with its `{required}`"
        )
    return problems


def env_only_keys(table: Mapping[str, object]) -> list[str]:
    """The env-only keys the file sets, each as its dotted path, in the reference's order."""
    found: list[str] = []

    def names(section: str) -> list[tuple[str, Mapping[str, object]]]:
        value = table.get(section)
        if not isinstance(value, dict):
            return []
        return [(n, v) for n, v in value.items() if isinstance(v, dict)]

    for name, provider in names("providers"):
        found += [f"providers.{name}.{key}" for key in ("base_url", "api_key") if key in provider]
    found += [f"targets.{name}.host" for name, target in names("targets") if "host" in target]
    for section, keys in (("runpod", ("api_key", "base_url")), ("hub", ("base_url",))):
        value = table.get(section)
        if isinstance(value, dict):
            found += [f"{section}.{key}" for key in keys if key in value]
    found += [key for key in ("hf_token", "log") if key in table]
    return found
