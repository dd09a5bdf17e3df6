"""`init --provider NAME`: the packaged configuration rewritten for one kind of provider."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import attrs

from overbrainer.config.dialects import Dialect, Protocol


@attrs.frozen
class Preset:
    """What `init --provider` writes for one provider: its table, base URL and two models.

    `reasoning` is false where the API never returns the raw reasoning trace (OpenAI's chat
    completions, Anthropic's summarised thinking), which `reasoning = true` would require.
    """

    name: str
    """The `[providers.<name>]` key (and `OVERBRAINER_PROVIDERS__<NAME>__*`)."""
    protocol: Protocol
    dialect: Dialect
    base_url: str
    generator: str
    parent: str
    reasoning: bool = True
    local: bool = False
    """A server on this machine: no key needed."""


PRESETS: Mapping[str, Preset] = MappingProxyType(
    {
        preset.dialect.value: preset
        for preset in (
            Preset(
                "openrouter",
                Protocol.OPENAI,
                Dialect.OPENROUTER,
                "https://openrouter.ai/api/v1",
                "qwen/qwen3-235b-a22b",
                "deepseek/deepseek-r1",
            ),
            Preset(
                "openai",
                Protocol.OPENAI,
                Dialect.OPENAI,
                "https://api.openai.com/v1",
                "gpt-4.1-mini",
                "gpt-4.1",
                reasoning=False,
            ),
            Preset(
                "anthropic",
                Protocol.ANTHROPIC,
                Dialect.ANTHROPIC,
                "https://api.anthropic.com/v1",
                "claude-haiku-4-5",
                "claude-sonnet-4-5",
                reasoning=False,
            ),
            Preset(
                "deepseek",
                Protocol.OPENAI,
                Dialect.DEEPSEEK,
                "https://api.deepseek.com/v1",
                "deepseek-chat",
                "deepseek-reasoner",
            ),
            Preset(
                "groq",
                Protocol.OPENAI,
                Dialect.GROQ,
                "https://api.groq.com/openai/v1",
                "llama-3.3-70b-versatile",
                "qwen/qwen3-32b",
            ),
            Preset(
                "together",
                Protocol.OPENAI,
                Dialect.TOGETHER,
                "https://api.together.xyz/v1",
                "meta-llama/Llama-3.3-70B-Instruct-Turbo",
                "deepseek-ai/DeepSeek-R1",
            ),
            Preset(
                "fireworks",
                Protocol.OPENAI,
                Dialect.FIREWORKS,
                "https://api.fireworks.ai/inference/v1",
                "accounts/fireworks/models/llama-v3p3-70b-instruct",
                "accounts/fireworks/models/deepseek-r1-0528",
            ),
            Preset(
                "ollama",
                Protocol.OPENAI,
                Dialect.OLLAMA,
                "http://127.0.0.1:11434/v1",
                "qwen3:8b",
                "qwen3:32b",
                local=True,
            ),
            Preset(
                "vllm",
                Protocol.OPENAI,
                Dialect.VLLM,
                "http://127.0.0.1:8000/v1",
                "Qwen/Qwen3-8B",
                "Qwen/Qwen3-8B",
                local=True,
            ),
            Preset(
                "llama_cpp",
                Protocol.OPENAI,
                Dialect.LLAMA_CPP,
                "http://127.0.0.1:8080/v1",
                "qwen3-8b",
                "qwen3-8b",
                local=True,
            ),
            Preset(
                "litellm",
                Protocol.OPENAI,
                Dialect.LITELLM,
                "http://127.0.0.1:4000/v1",
                "generator-model",
                "parent-model",
                local=True,
            ),
            Preset(
                "local",
                Protocol.OPENAI,
                Dialect.OPENAI_COMPATIBLE,
                "http://127.0.0.1:8000/v1",
                "your-model",
                "your-model",
                local=True,
            ),
        )
    }
)
"""The presets by the name `--provider` takes: the dialect's."""


DIALECT_COMMENT = "which API it is (docs/configuration.md)"


def _replace_once(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise ValueError(f"the packaged template has {text.count(old)} of {old!r}, not one")
    return text.replace(old, new)


def _commented(line: str, comment: str) -> str:
    """`line` with `comment` in the template's comment column (29), and a newline."""
    return f"{line}{' ' * max(1, 29 - len(line))}# {comment}".rstrip() + "\n"


def preset_config(template: str, preset: Preset) -> str:
    """The packaged `overbrainer.toml` (written for OpenRouter) rewritten for `preset`."""
    text = _replace_once(
        template,
        '# dialect = "openrouter"     # which API it is; detected from a well-known base URL\n',
        _commented(f'dialect = "{preset.dialect.value}"', DIALECT_COMMENT),
    )
    text = _replace_once(
        text,
        'protocol = "openai"          #',
        _commented(f'protocol = "{preset.protocol.value}"', "")[:-1],
    )
    text = _replace_once(text, 'model = "qwen/qwen3-235b-a22b"', f'model = "{preset.generator}"')
    text = _replace_once(text, 'model = "deepseek/deepseek-r1"', f'model = "{preset.parent}"')
    if not preset.reasoning:
        text = _replace_once(
            text,
            "reasoning = true\n",
            "reasoning = false            # this API never returns the raw reasoning trace\n",
        )
    text = text.replace("[providers.openrouter]", f"[providers.{preset.name}]")
    text = text.replace('provider = "openrouter"', f'provider = "{preset.name}"')
    return text.replace("PROVIDERS__OPENROUTER__", f"PROVIDERS__{preset.name.upper()}__")


def preset_env_example(template: str, preset: Preset) -> str:
    """The packaged `.env.example` rewritten for `preset`'s base URL and key."""
    text = _replace_once(
        template,
        "OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL=https://openrouter.ai/api/v1",
        f"OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL={preset.base_url}",
    )
    if preset.local:
        start = text.index("# The provider's key")
        end = text.index("OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY=\n")
        note = "# A server on this machine needs no key (none set: no auth header is sent).\n# "
        text = text[:start] + note + text[end:]
    text = text.replace("#openrouter_api_key", f"#{preset.name}_api_key")
    return text.replace("PROVIDERS__OPENROUTER__", f"PROVIDERS__{preset.name.upper()}__")
