"""Our checks of overbrainer.toml beyond the reference's: later sections, listen, batch APIs."""

from __future__ import annotations

from pathlib import Path

import pytest

from overbrainer.config.load import load_settings
from overbrainer.config.ranges import is_ollama_name, parse_listen
from overbrainer.config.settings import BatchApi
from tests.config_support import HEAD, ROLES, problems, with_role

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
        "container-gpus-and-user",
        HEAD
        + ROLES
        + '[targets.a]\nkind = "local"\nruntime = "docker"\ngpus = "first"\n'
        + 'container_user = "me; rm"\n'
        + '[targets.b]\nkind = "ssh"\nruntime = "docker"\ngpus = "0,1"\ncontainer_user = "image"\n',
        [
            'targets.a.gpus: must be "auto", "all", "none" or GPU indices such as "0,1"',
            'targets.a.container_user: must be "auto", "image", or a user such as "1000:1000"',
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
        "reconnect-budget",
        HEAD
        + ROLES
        + '[targets.box]\nkind = "ssh"\nruntime = "native"\nreconnect_secs = 0\n'
        + '[targets.pod]\nkind = "runpod"\ngpu_types = "auto"\nmax_hours = 1.0\n'
        + "reconnect_secs = 100000\n",
        [
            "targets.box.reconnect_secs: must be in (0, 86400]",
            "targets.pod.reconnect_secs: must be in (0, 86400]",
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
