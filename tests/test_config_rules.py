"""One test per load error and validation rule of overbrainer.toml, in the reference's order."""

from __future__ import annotations

from pathlib import Path

import pytest

from overbrainer.config.errors import ConfigError
from overbrainer.config.load import load_settings
from tests.config_support import HEAD, ROLES, problems, with_role

# --- load and parse errors -----------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, {})
    assert caught.value.message == (
        f"cannot read {tmp_path}/overbrainer.toml: No such file or directory"
    )


def test_wrong_type_names_key_and_type_not_value(tmp_path: Path) -> None:
    found = problems(tmp_path, HEAD + ROLES + '[pipeline]\nconcurrency = "sixteen"\n')
    assert found == ["`pipeline.concurrency` has the wrong type, expected an integer"]


def test_syntax_error_gives_line_and_column_only(tmp_path: Path) -> None:
    (tmp_path / "overbrainer.toml").write_text('[project]\nname = "x"\nsecret = sk-123\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, {})
    assert caught.value.message == (
        "invalid configuration: TOML syntax error in overbrainer.toml at line 3, column 10"
    )


def test_unknown_field(tmp_path: Path) -> None:
    text = HEAD + ROLES.replace('model = "g"', 'model = "g", modle = "h"')
    assert problems(tmp_path, text) == [
        "unknown field `roles.generator.modle`, did you mean `roles.generator.model`?"
    ]


def test_missing_field(tmp_path: Path) -> None:
    assert problems(tmp_path, HEAD.replace('name = "demo"', "") + ROLES) == [
        "missing field `project.name`"
    ]


def test_unknown_variant(tmp_path: Path) -> None:
    text = HEAD.replace('protocol = "anthropic"', 'protocol = "grpc"') + ROLES
    assert problems(tmp_path, text) == [
        "`providers.claude.protocol`: unknown variant, expected one of `openai`, `anthropic`, "
        "`stub`"
    ]


def test_a_single_parse_problem_stays_on_one_line(tmp_path: Path) -> None:
    (tmp_path / "overbrainer.toml").write_text(HEAD + ROLES + "[pipeline]\nseed = true\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, {})
    assert caught.value.message == (
        "invalid configuration: `pipeline.seed` has the wrong type, expected an integer"
    )


# --- semantic rules, in the reference's order ----------------------------------------------

RULES: list[tuple[str, str, list[str]]] = [
    # 1. env-only keys
    (
        "env-only-provider-keys",
        HEAD.replace('protocol = "openai"', 'protocol = "openai"\nbase_url = "u"\napi_key = "k"')
        + ROLES,
        [
            "providers.openrouter.base_url: must be set through env, not in overbrainer.toml",
            "providers.openrouter.api_key: must be set through env, not in overbrainer.toml",
        ],
    ),
    (
        "env-only-target-host",
        HEAD + ROLES + '[targets.box]\nkind = "ssh"\nruntime = "native"\nhost = "h"\n',
        ["targets.box.host: must be set through env, not in overbrainer.toml"],
    ),
    (
        "env-only-runpod-and-tokens",
        'hf_token = "t"\nlog = "debug"\n'
        + HEAD
        + ROLES
        + '[runpod]\napi_key = "k"\nbase_url = "https://x"\n',
        [
            "runpod.api_key: must be set through env, not in overbrainer.toml",
            "runpod.base_url: must be set through env, not in overbrainer.toml",
            "hf_token: must be set through env, not in overbrainer.toml",
            "log: must be set through env, not in overbrainer.toml",
        ],
    ),
    # 2. names
    (
        "provider-name",
        HEAD + '[providers.Open-Router]\nprotocol = "openai"\n' + ROLES,
        ["providers.Open-Router: name must match ^[a-z0-9_]+$"],
    ),
    (
        "target-name",
        HEAD + ROLES + '[targets.GPU]\nkind = "local"\nruntime = "native"\n',
        ["targets.GPU: name must match ^[a-z0-9_]+$"],
    ),
    # 3. providers of roles
    (
        "unknown-provider",
        with_role("parent", '{ provider = "nowhere", model = "p" }'),
        ["roles.parent: unknown provider `nowhere`"],
    ),
    (
        "anthropic-embedder",
        HEAD + ROLES + 'embedder = { provider = "claude", model = "e" }\n',
        ["roles.embedder: the anthropic protocol has no embeddings, use an openai provider"],
    ),
    # 4. role parameters
    (
        "max-tokens",
        with_role("generator", '{ provider = "openrouter", model = "g", max_tokens = 0 }'),
        ["roles.generator.max_tokens: must be at least 1"],
    ),
    (
        "temperature-range",
        with_role("generator", '{ provider = "openrouter", model = "g", temperature = 2.5 }'),
        ["roles.generator.temperature: must be in [0, 2]"],
    ),
    (
        "temperature-nan",
        with_role("generator", '{ provider = "openrouter", model = "g", temperature = nan }'),
        ["roles.generator.temperature: must be in [0, 2]"],
    ),
    (
        "effort-needs-reasoning",
        with_role(
            "generator", '{ provider = "openrouter", model = "g", reasoning_effort = "low" }'
        ),
        ["roles.generator.reasoning_effort: requires reasoning = true"],
    ),
    # 5. anthropic: no temperature (its SDK's request types declare none), reasoning or not
    (
        "anthropic-temperature",
        with_role(
            "parent", '{ provider = "claude", model = "p", reasoning = true, temperature = 1.0 }'
        ),
        [
            "roles.parent.temperature: Anthropic's Messages API takes no temperature "
            "(its published request types declare none); remove it"
        ],
    ),
    (
        "anthropic-temperature-plain",
        with_role("parent", '{ provider = "claude", model = "p", temperature = 0.5 }'),
        [
            "roles.parent.temperature: Anthropic's Messages API takes no temperature "
            "(its published request types declare none); remove it"
        ],
    ),
    # 6. thinking budget
    (
        "budget-needs-reasoning",
        with_role("parent", '{ provider = "claude", model = "p", thinking_budget = 2048 }'),
        ["roles.parent.thinking_budget: requires reasoning = true"],
    ),
    (
        "budget-with-effort",
        with_role(
            "parent",
            '{ provider = "claude", model = "p", reasoning = true, thinking_budget = 2048, '
            'reasoning_effort = "high" }',
        ),
        ["roles.parent.thinking_budget: cannot be combined with reasoning_effort"],
    ),
    (
        "budget-only-anthropic",
        with_role(
            "parent",
            '{ provider = "openrouter", model = "p", reasoning = true, thinking_budget = 2048 }',
        ),
        ["roles.parent.thinking_budget: only valid on the anthropic protocol"],
    ),
    (
        "budget-at-least-1024",
        with_role(
            "parent",
            '{ provider = "claude", model = "p", reasoning = true, thinking_budget = 1023 }',
        ),
        ["roles.parent.thinking_budget: must be at least 1024"],
    ),
    (
        "budget-below-max-tokens",
        with_role(
            "parent",
            '{ provider = "claude", model = "p", reasoning = true, thinking_budget = 4096, '
            "max_tokens = 4096 }",
        ),
        ["roles.parent.thinking_budget: must be less than max_tokens"],
    ),
    # 7. topics
    (
        "duplicate-topic",
        HEAD + ROLES + '[[topics]]\nname = "a"\nsubtopics = 1\nquestions_per_subtopic = 1\n' * 2,
        ["topics: duplicate name `a`"],
    ),
    (
        "topic-subtopics",
        HEAD + ROLES + '[[topics]]\nname = "a"\nsubtopics = 0\nquestions_per_subtopic = 1\n',
        ["topics.a.subtopics: must be at least 1"],
    ),
    (
        "topic-questions",
        HEAD + ROLES + '[[topics]]\nname = "a"\nsubtopics = 1\nquestions_per_subtopic = 0\n',
        ["topics.a.questions_per_subtopic: must be at least 1"],
    ),
    # 8. pipeline
    (
        "concurrency-low",
        HEAD + ROLES + "[pipeline]\nconcurrency = 0\n",
        ["pipeline.concurrency: must be at least 1"],
    ),
    (
        "concurrency-high",
        HEAD + ROLES + "[pipeline]\nconcurrency = 1025\n",
        ["pipeline.concurrency: must be at most 1024"],
    ),
    (
        "eval-ratio",
        HEAD + ROLES + "[pipeline]\neval_ratio = 1.0\n",
        ["pipeline.eval_ratio: must be in (0, 1)"],
    ),
    (
        "eval-ratio-nan",
        HEAD + ROLES + "[pipeline]\neval_ratio = nan\n",
        ["pipeline.eval_ratio: must be in (0, 1)"],
    ),
    (
        "dedup-threshold",
        HEAD + ROLES + "[pipeline]\ndedup_threshold = 0.0\n",
        ["pipeline.dedup_threshold: must be in (0, 1]"],
    ),
    (
        "embedding-threshold",
        HEAD + ROLES + "[pipeline]\nembedding_threshold = 1.5\n",
        ["pipeline.embedding_threshold: must be in (0, 1]"],
    ),
    (
        "question-batch-size",
        HEAD + ROLES + "[pipeline]\nquestion_batch_size = 0\n",
        ["pipeline.question_batch_size: must be at least 1"],
    ),
    (
        "request-timeout",
        HEAD + ROLES + "[pipeline]\nrequest_timeout_secs = 0\n",
        ["pipeline.request_timeout_secs: must be at least 1"],
    ),
    # 9. training and targets
    (
        "training-target",
        HEAD + ROLES + '[training]\ntarget = "cloud"\nbase_model = "b"\nadapter = "lora"\n',
        ["training.target: unknown target `cloud`"],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_rule(tmp_path: Path, text: str, expected: list[str]) -> None:
    assert problems(tmp_path, text) == expected


def test_limits_themselves_are_valid(tmp_path: Path) -> None:
    text = (
        with_role(
            "parent",
            '{ provider = "claude", model = "p", reasoning = true, thinking_budget = 1024, '
            "max_tokens = 1025 }",
        )
        + "[pipeline]\nconcurrency = 1024\neval_ratio = 0.999\ndedup_threshold = 1.0\n"
        + "embedding_threshold = 1.0\nrequest_timeout_secs = 1\n"
    )
    assert (
        problems(tmp_path, text.replace('model = "g" }', 'model = "g", temperature = 2.0 }')) == []
    )


def test_every_problem_is_reported_together_in_order(tmp_path: Path) -> None:
    text = (
        'log = "x"\n'
        + with_role(
            "parent",
            '{ provider = "claude", model = "p", reasoning = true, temperature = 3.0, '
            "thinking_budget = 100 }",
        ).replace('model = "g" }', 'model = "g", max_tokens = 0 }')
        + "embedder = { provider = 'ghost', model = 'e' }\n"
        + '[providers.Bad]\nprotocol = "openai"\n'
        + '[[topics]]\nname = "t"\nsubtopics = 0\nquestions_per_subtopic = 1\n'
        + "[pipeline]\nconcurrency = 0\nrequest_timeout_secs = 0\n"
    )
    (tmp_path / "overbrainer.toml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, {})
    assert caught.value.message == "invalid configuration:\n  " + "\n  ".join(
        [
            "log: must be set through env, not in overbrainer.toml",
            "providers.Bad: name must match ^[a-z0-9_]+$",
            "roles.embedder: unknown provider `ghost`",
            "roles.generator.max_tokens: must be at least 1",
            "roles.parent.temperature: must be in [0, 2]",
            "roles.parent.temperature: Anthropic's Messages API takes no temperature "
            "(its published request types declare none); remove it",
            "roles.parent.thinking_budget: must be at least 1024",
            "topics.t.subtopics: must be at least 1",
            "pipeline.concurrency: must be at least 1",
            "pipeline.request_timeout_secs: must be at least 1",
        ]
    )
