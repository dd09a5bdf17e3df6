"""`load_settings`: overbrainer.toml + `.env` + `OVERBRAINER_*` -> frozen Settings (draft)."""

from __future__ import annotations

import difflib
import enum
import math
import os
import re
import tomllib
import typing
from collections.abc import Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any, get_origin

import attrs
import cattrs
from cattrs.cols import homogenous_tuple_structure_factory, mapping_structure_factory
from cattrs.gen import make_dict_structure_fn

from overbrainer.config import settings as s
from overbrainer.config.env import PREFIX as ENV_PREFIX
from overbrainer.config.env import (
    EnvStr,
    env_only_keys,
    env_paths,
    load_dotenv,
    overlay,
    undeclared_entries,
)
from overbrainer.config.errors import ConfigError
from overbrainer.config.secrets import Secret
from overbrainer.config.target_settings import TargetSettings, settings_kinds
from overbrainer.config.toml_errors import syntax_error_at
from overbrainer.model import redact
from overbrainer.model.text import decode_utf8

CONFIG_FILE = "overbrainer.toml"


class _WrongType(Exception):
    def __init__(self, expected: str) -> None:
        super().__init__(expected)
        self.expected = expected


def _int(value: object, _: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, EnvStr) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    raise _WrongType("an integer")


def _float(value: object, _: object) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, EnvStr):
        try:
            return float(value)
        except ValueError:
            pass
    raise _WrongType("a number")


def _bool(value: object, _: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, EnvStr) and value.strip() in ("true", "false"):
        return value.strip() == "true"
    raise _WrongType("a boolean")


def _str(value: object, _: object) -> str:
    if isinstance(value, str):
        return str(value)
    raise _WrongType("a string")


def _secret(value: object, _: object) -> Secret:
    return Secret(_str(value, None))


def _list_or_auto(value: object, _: object) -> s.ListOrAuto:
    if isinstance(value, str):
        text = value.strip()
        if text == "auto":
            return s.ListOrAuto(auto=True)
        return s.ListOrAuto(items=tuple(i.strip() for i in text.split(",")) if text else ())
    if isinstance(value, list) and all(isinstance(i, str) for i in value):
        return s.ListOrAuto(items=tuple(i.strip() for i in value))
    raise _WrongType('"auto", a list of strings or a comma-separated string')


_DECIMAL = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")
"""A finite decimal number as the environment may write it (no `_`, no spaces, no `nan`)."""


def _extra(value: object) -> object:
    if isinstance(value, EnvStr):
        text = str(value)
        if text in ("true", "false"):
            return text == "true"
        if re.fullmatch(r"[+-]?\d+", text):
            # Only canonical, in-range integers: `007`, `+5` or 2**63 stay text (the reference).
            number = int(text)
            return number if str(number) == text and -(2**63) <= number < 2**63 else text
        if _DECIMAL.fullmatch(text) and math.isfinite(float(text)):
            return float(text)
        return text
    if isinstance(value, dict):
        return {k: _extra(v) for k, v in value.items()}
    return value


def _kind_names() -> str:
    names = list(settings_kinds())
    if not names:  # the command did not import targets' registry: a bug, said plainly
        return "(none is registered)"
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _origin(t: Any) -> object:
    # Widens get_origin's typed result: mypy --strict rejects `get_origin(t) is tuple` as
    # a non-overlapping identity check.
    return get_origin(t)


def _shaped(kind: type, expected: str, inner: Any) -> Any:
    """`inner`, refusing a value that is not a `kind` with a wrong-type problem."""

    def hook(value: object, target: object) -> object:
        if not isinstance(value, kind):
            raise _WrongType(expected)
        return inner(value, target)

    return hook


def _converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)
    conv.register_structure_hook_factory(
        attrs.has, lambda cls: _shaped(dict, "a table", make_dict_structure_fn(cls, conv))
    )
    conv.register_structure_hook_factory(
        lambda t: _origin(t) is dict and t != dict[str, object],
        lambda t: _shaped(dict, "a table", mapping_structure_factory(t, conv)),
    )
    conv.register_structure_hook_factory(
        lambda t: _origin(t) is tuple,
        lambda t: _shaped(list, "an array of tables", homogenous_tuple_structure_factory(t, conv)),
    )
    conv.register_structure_hook(int, _int)
    conv.register_structure_hook(float, _float)
    conv.register_structure_hook(bool, _bool)
    conv.register_structure_hook(str, _str)
    conv.register_structure_hook(Secret, _secret)
    conv.register_structure_hook(s.ListOrAuto, _list_or_auto)
    conv.register_structure_hook_func(
        lambda t: t == dict[str, object],
        _shaped(dict, "a table", lambda v, _: {k: _extra(x) for k, x in v.items()}),
    )

    def target(value: object, _: object) -> TargetSettings:
        if not isinstance(value, dict):
            raise _WrongType("a table")
        body = dict(value)
        kind = body.pop("kind", None)
        kinds = settings_kinds()
        if kind not in kinds:
            raise _WrongType(f"kind {_kind_names()}")
        return conv.structure(body, kinds[str(kind)].settings_type)

    conv.register_structure_hook_func(lambda t: t == TargetSettings, target)
    return conv


_CONVERTER = _converter()


def _problems(error: BaseException, path: str, tp: object = None) -> list[str]:
    """The user's lines for a structuring error at `path` (`tp`: the type expected there)."""
    if isinstance(error, cattrs.errors.ForbiddenExtraKeysError):
        prefix = f"{path}." if path else ""
        known = [field.name for field in attrs.fields(error.cl)] if attrs.has(error.cl) else []
        return [
            f"unknown field `{prefix}{key}`{_did_you_mean(key, known, prefix)}"
            for key in sorted(error.extra_fields)
        ]
    if isinstance(error, (cattrs.ClassValidationError, cattrs.IterableValidationError)):
        found: list[str] = []
        with_notes, without = error.group_exceptions()
        for inner, note in with_notes:
            name = getattr(note, "name", None)
            name = name if name is not None else getattr(note, "index", "?")
            inner_path = f"{path}.{name}" if path else str(name)
            found += _problems(inner, inner_path, getattr(note, "type", None))
        for inner in without:
            found += _problems(inner, path)
        return found
    if isinstance(error, KeyError):
        return [f"missing field `{path}`"]
    if isinstance(error, _WrongType):
        return [f"`{path}` has the wrong type, expected {error.expected}"]
    if isinstance(error, ValueError):
        return [f"`{path}`: unknown variant{_expected_variants(tp)}"]
    return [f"`{path}`: invalid value"]


def _did_you_mean(key: str, known: Sequence[str], prefix: str) -> str:
    """`, did you mean `x.y`?` for the known key closest to a mistyped one; empty if none is."""
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    return f", did you mean `{prefix}{close[0]}`?" if close else ""


def _expected_variants(tp: object) -> str:
    """`, expected one of `a`, `b`` for an enum (or optional enum) field; empty otherwise.

    The reference drops the value given (it may be a secret); the allowed ones are not.
    """
    choices = [arg for arg in (tp, *typing.get_args(tp)) if isinstance(arg, type)]
    for choice in choices:
        if issubclass(choice, enum.Enum):
            names = ", ".join(f"`{member.value}`" for member in choice)
            return f", expected one of {names}"
    return ""


def _name_env_var(problem: str, paths: Mapping[tuple[str, ...], object]) -> str:
    """`problem`, plus the variable that set its key when the value came from the environment."""
    key = re.match(r"^(?:unknown field )?`([^`]+)`", problem)
    if key is None:
        return problem
    path = tuple(key[1].split("."))
    if path not in paths:
        return problem
    variable = f"{ENV_PREFIX}{'__'.join(path).upper()}"
    if problem.startswith("unknown field"):
        # Right after the key: a suggestion, if any, stays at the end.
        return f"{problem[: key.end()]} (from {variable}){problem[key.end() :]}"
    return f"{problem} (from {variable})"


def register_secrets(settings: s.Settings) -> None:
    """Have every literal secret and URL userinfo of `settings` masked from now on.

    `vault:` references are no secret; their values are registered when resolved.
    """
    literals = [provider.api_key for provider in settings.providers.values()]
    literals += [settings.runpod.api_key, settings.hf_token]
    for secret in literals:
        if secret is not None and not secret.is_reference:
            redact.register(secret.text)
    urls = [provider.base_url for provider in settings.providers.values()]
    for url in [*urls, settings.runpod.base_url, settings.hub.base_url]:
        redact.register_url(url)


def load_settings(project_dir: Path, environ: MutableMapping[str, str] | None = None) -> s.Settings:
    """Load and validate the project's configuration; raises ConfigError (exit code 2)."""
    env = os.environ if environ is None else environ
    load_dotenv(project_dir, env)
    path = project_dir / CONFIG_FILE
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"cannot read {project_dir}/{CONFIG_FILE}: {error.strerror}") from None
    text = decode_utf8(raw, str(path))
    try:
        table: dict[str, object] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        at = syntax_error_at(text, error)
        message = f"invalid configuration: TOML syntax error in {CONFIG_FILE}{at}"
        raise ConfigError(message) from None
    in_file = env_only_keys(table)
    env_only = [f"{k}: must be set through env, not in overbrainer.toml" for k in in_file]
    paths = env_paths(env)
    undeclared = undeclared_entries(table, paths)
    if undeclared:
        raise ConfigError.parse(undeclared)
    overlay(table, paths)
    try:
        loaded = _CONVERTER.structure(table, s.Settings)
    except Exception as error:  # cattrs wraps every problem; each is named by its key path
        problems = [_name_env_var(problem, paths) for problem in _problems(error, "")]
        raise ConfigError.parse(problems) from None
    register_secrets(loaded)
    from overbrainer.config.ranges import check_sections
    from overbrainer.config.validate import check

    # A key that may not be in the file at all gets that one problem, not one about its value.
    checked = [p for p in check(loaded) + check_sections(loaded) if p.split(":")[0] not in in_file]
    problems = env_only + checked
    if problems:
        raise ConfigError.invalid(problems)
    return attrs.evolve(loaded, from_env=frozenset(".".join(p) for p in paths))
