"""One test per load error and validation rule of overbrainer.toml, in the reference's order."""

from __future__ import annotations

from pathlib import Path

import pytest

from overbrainer.config.errors import ConfigError
from overbrainer.config.load import load_settings
from overbrainer.config.ranges import is_ollama_name, parse_listen
from overbrainer.config.settings import BatchApi

HEAD = """
[project]
name = "demo"
[providers.openrouter]
protocol = "openai"
[providers.claude]
protocol = "anthropic"
"""
ROLES = """
[roles]
generator = { provider = "openrouter", model = "g" }
parent = { provider = "openrouter", model = "p", reasoning = true }
"""


def problems(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> list[str]:
    """The problems a config reports, or [] when it loads."""
    (tmp_path / "overbrainer.toml").write_text(text)
    try:
        load_settings(tmp_path, dict(env or {}))
    except ConfigError as error:
        assert error.exit_code == 2
        return list(error.problems) or [error.message]
    return []


def with_role(role: str, body: str) -> str:
    """HEAD with `roles.<role>` replaced by the inline table `body`."""
    roles = {
        "generator": '{ provider = "openrouter", model = "g" }',
        "parent": '{ provider = "openrouter", model = "p", reasoning = true }',
    }
    roles[role] = body
    lines = "".join(f"{name} = {table}\n" for name, table in roles.items())
    return HEAD + "[roles]\n" + lines


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


# --- our checks of the later sections ------------------------------------------------------

OURS: list[tuple[str, str, list[str]]] = [
    (
        "role-prices",
        with_role(
            "generator",
            '{ provider = "openrouter", model = "g", price_in = -1.0, price_out = 2.0 }',
        ).replace("reasoning = true }", "reasoning = true, price_in = 1.0 }"),
        [
            "roles.generator.price_in: must be at least 0",
            "roles.parent: price_in and price_out must be set together",
        ],
    ),
    (
        "pipeline-signed",
        HEAD + ROLES + "[pipeline]\nmax_retries = -1\nseed = -1\n",
        ["pipeline.max_retries: must be at least 0", "pipeline.seed: must be in [0, 2^64)"],
    ),
    (
        "container-targets",
        HEAD
        + ROLES
        + '[targets.a]\nkind = "local"\nruntime = "native"\nengine = "podman"\nimage = "x y"\n'
        + '[targets.b]\nkind = "ssh"\nruntime = "docker"\nvenv = "/opt/venv"\n',
        [
            'targets.a.engine: only valid with runtime = "docker"',
            'targets.a.image: only valid with runtime = "docker"',
            "targets.a.image: must be a container image reference",
            'targets.b.venv: only valid with runtime = "native"',
        ],
    ),
    (
        "runpod-target",
        HEAD
        + ROLES
        + '[targets.pod]\nkind = "runpod"\ngpu_types = ["auto"]\nmax_hours = 1.0\n'
        + "min_vram_gb = 0\nmax_cost_usd = 0.0\ncontainer_disk_gb = 10\nboot_grace_minutes = 4\n"
        + 'venv = "venv"\nnetwork_volume_id = "v"\ndata_center_ids = ["A", "B"]\n',
        [
            'targets.pod: write "auto" as a string, not inside a list',
            'targets.pod.min_vram_gb: only valid with gpu_types = "auto"',
            "targets.pod.min_vram_gb: must be at least 1",
            "targets.pod.max_cost_usd: must be greater than 0",
            "targets.pod.container_disk_gb: must be at least 20",
            "targets.pod.boot_grace_minutes: must be at least 5",
            "targets.pod.venv: must be an absolute path",
            "targets.pod.network_volume_id: needs exactly one data_center_ids entry",
        ],
    ),
    (
        "runpod-volume",
        HEAD
        + ROLES
        + '[targets.pod]\nkind = "runpod"\ngpu_types = []\nmax_hours = 721.0\nmax_volume_gb = 0\n'
        + 'data_center_ids = "auto"\n',
        [
            "targets.pod.max_hours: must be at most 720",
            'targets.pod.gpu_types: must list at least one GPU type, or be "auto"',
            "targets.pod.max_volume_gb: only valid with network_volume_id",
            "targets.pod.max_volume_gb: must be at least 1",
        ],
    ),
    (
        "runpod-prices-and-volume",
        HEAD
        + ROLES
        + '[targets.pod]\nkind = "runpod"\ngpu_types = ["A"]\nmax_hours = 1.0\ngpu_count = 0\n'
        + "max_price_per_hour = 0.0\nretrieve_grace_minutes = 0\n"
        + 'network_volume_id = "v"\ndata_center_ids = "auto"\n',
        [
            "targets.pod.gpu_count: must be at least 1",
            'targets.pod.max_price_per_hour: only valid with gpu_types = "auto"',
            "targets.pod.max_price_per_hour: must be greater than 0",
            "targets.pod.retrieve_grace_minutes: must be at least 1",
            'targets.pod.data_center_ids: cannot be "auto" with network_volume_id',
        ],
    ),
    (
        "export",
        HEAD + ROLES + '[export]\nquantize = "Q4_0"\nollama_name = "bad name"\n',
        [
            "export.quantize: must be one of Q4_K_M, Q4_K_S, Q5_K_M, Q5_K_S, Q6_K, Q8_0, "
            "Q3_K_M, Q2_K, F16, BF16",
            "export.ollama_name: must be an Ollama model name ([host/][namespace/]model[:tag])",
        ],
    ),
    (
        "compare",
        HEAD
        + ROLES
        + "[compare]\nparent_price_in = -1.0\nchild_price_per_hour = nan\nmax_tokens = 0\n"
        + "temperature = 2.1\nserver_start_secs = 0\nconcurrency = 0\n",
        [
            "compare.parent_price_in: must be at least 0",
            "compare.child_price_per_hour: must be at least 0",
            "compare.max_tokens: must be at least 1",
            "compare.temperature: must be in [0, 2]",
            "compare.server_start_secs: must be at least 1",
            "compare.concurrency: must be in [1, 64]",
        ],
    ),
    (
        "metrics-listen",
        HEAD + ROLES + '[metrics]\nlisten = "localhost:9464"\n',
        ["metrics.listen: must be an IP address and port, such as 127.0.0.1:9464 or [::1]:9464"],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [r[1:] for r in OURS], ids=[r[0] for r in OURS])
def test_our_rule(tmp_path: Path, text: str, expected: list[str]) -> None:
    assert problems(tmp_path, text) == expected


def test_env_base_urls_must_be_https_or_loopback(tmp_path: Path) -> None:
    env = {
        "OVERBRAINER_RUNPOD__BASE_URL": "http://api.example.com/v2",
        "OVERBRAINER_HUB__BASE_URL": "ftp://hub",
    }
    assert problems(tmp_path, HEAD + ROLES, env) == [
        "runpod.base_url: must be https, or http on a loopback host",
        "hub.base_url: must be https, or http on a loopback host",
    ]
    fine = {
        "OVERBRAINER_RUNPOD__BASE_URL": "http://127.0.0.1:8080/v2",
        "OVERBRAINER_HUB__BASE_URL": "https://huggingface.co",
    }
    assert problems(tmp_path, HEAD + ROLES, fine) == []


@pytest.mark.parametrize(
    ("listen", "parsed"),
    [
        ("127.0.0.1:9464", ("127.0.0.1", 9464)),
        ("0.0.0.0:0", ("0.0.0.0", 0)),
        ("[::1]:9464", ("::1", 9464)),
        ("[::]:65535", ("::", 65535)),
        ("127.0.0.1:65536", None),
        ("::1:9464", None),
        ("127.0.0.1", None),
        ("localhost:9464", None),
        ("127.0.0.1:", None),
        ("127.0.0.1:-1", None),
        ("01.0.0.1:80", None),
    ],
)
def test_parse_listen(listen: str, parsed: tuple[str, int] | None) -> None:
    assert parse_listen(listen) == parsed


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("child", True),
        ("child:latest", True),
        ("me/child:q4_k_m", True),
        ("registry.example.com:5000/me/child:v1.2", True),
        ("https://registry.example.com/me/child", True),
        ("me.team/child", False),
        ("a//b", False),
        ("child/", False),
        ("-child", False),
        ("bad name", False),
        ("x" * 81, False),
        ("a/b/c/d", False),
    ],
)
def test_ollama_names(name: str, valid: bool) -> None:
    assert is_ollama_name(name) is valid


# --- batch APIs (ours) ---------------------------------------------------------------------


def test_batch_is_the_parents_alone(tmp_path: Path) -> None:
    text = with_role("generator", '{ provider = "openrouter", model = "g", batch = true }')
    assert problems(tmp_path, text) == [
        "roles.generator.batch: only the parent's answers can use a batch API"
    ]


def test_batch_on_the_stub_is_refused(tmp_path: Path) -> None:
    text = with_role("parent", '{ provider = "openrouter", model = "p", batch = true }')
    assert problems(tmp_path, text) == []
    stub = text.replace('protocol = "openai"', 'protocol = "stub"')
    assert problems(tmp_path, stub) == [
        "roles.parent.batch: the stub protocol of provider `openrouter` has no batch API"
    ]


def test_the_batch_api_follows_the_protocol_and_openrouter(tmp_path: Path) -> None:
    text = with_role("parent", '{ provider = "openrouter", model = "p", batch = true }')
    (tmp_path / "overbrainer.toml").write_text(text)
    plain = load_settings(tmp_path, {})
    assert plain.providers["openrouter"].batch_kind is BatchApi.OPENAI
    assert plain.providers["claude"].batch_kind is BatchApi.ANTHROPIC
    env = {"OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL": "https://openrouter.ai/api/v1"}
    routed = load_settings(tmp_path, env)
    assert routed.providers["openrouter"].batch_kind is BatchApi.INLINE
    assert routed.providers["openrouter"].discount == 0.5
    wrong = text.replace('protocol = "anthropic"', 'protocol = "anthropic"\nbatch_api = "inline"')
    assert problems(tmp_path, wrong) == [
        "providers.claude.batch_api: `inline` does not match the anthropic protocol"
    ]


@pytest.mark.parametrize("value", ["0", "1.5", "-0.5"])
def test_batch_discount_is_a_fraction(tmp_path: Path, value: str) -> None:
    text = HEAD + f"batch_discount = {value}\n" + ROLES
    assert problems(tmp_path, text) == ["providers.claude.batch_discount: must be in (0, 1]"]


def test_batch_poll_secs_is_positive(tmp_path: Path) -> None:
    text = HEAD + ROLES + "[pipeline]\nbatch_poll_secs = 0\n"
    assert problems(tmp_path, text) == ["pipeline.batch_poll_secs: must be in (0, 3600]"]


@pytest.mark.parametrize("value", ["0", "3601"])
def test_adaptive_window_secs_is_a_sane_window(tmp_path: Path, value: str) -> None:
    text = HEAD + ROLES + f"[pipeline]\nadaptive_window_secs = {value}\n"
    assert problems(tmp_path, text) == ["pipeline.adaptive_window_secs: must be in (0, 3600]"]
