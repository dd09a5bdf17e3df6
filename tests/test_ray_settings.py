"""`[targets.NAME] kind = "ray"` read by the config reader, and its checks: one line per
problem, naming `targets.NAME.key`; the token and secret headers only from the environment."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from overbrainer.config.errors import ConfigError
from overbrainer.config.load import load_settings
from overbrainer.model import redact
from overbrainer.model.errors import UsageError
from overbrainer.targets import registry
from overbrainer.targets.kind import JobChecks
from overbrainer.targets.machine import JobNeeds
from overbrainer.targets.ray.connect import request_headers
from overbrainer.targets.ray.kind import RAY
from overbrainer.targets.ray.settings import RayTarget, RuntimeEnvExtras, problems, summary
from tests.config_support import BASE, write

TABLE = """
[targets.cluster]
kind = "ray"
address = "https://ray.example.com:8265"
storage = "s3://bucket/runs"
node_storage = "/mnt/runs"
token_env = "RAY_TOKEN"
headers = { "X-Team" = "ml" }
header_envs = { "Cf-Access-Client-Secret" = "CF_SECRET" }
num_workers = 4
resources_per_worker = { GPU = 1, CPU = 8 }
[targets.cluster.runtime_env]
env_vars = { HF_HOME = "/mnt/hf" }
pip = ["axolotl[ray]==0.19.0"]
"""


def test_the_table_reads_into_the_kinds_settings(tmp_path: Path) -> None:
    assert registry.kind_named("ray").settings.settings_type is RayTarget  # the registry's one line
    target: object = load_settings(write(tmp_path, BASE + TABLE), {}).targets["cluster"]
    assert target == RayTarget(
        address="https://ray.example.com:8265",
        storage="s3://bucket/runs",
        node_storage="/mnt/runs",
        token_env="RAY_TOKEN",
        headers={"X-Team": "ml"},
        header_envs={"Cf-Access-Client-Secret": "CF_SECRET"},
        num_workers=4,
        resources_per_worker={"GPU": 1.0, "CPU": 8.0},
        runtime_env=RuntimeEnvExtras(env_vars={"HF_HOME": "/mnt/hf"}, pip=["axolotl[ray]==0.19.0"]),
    )
    assert isinstance(target, RayTarget)
    assert problems("cluster", target) == []
    assert (
        summary(target)[0] == "ray cluster https://ray.example.com:8265, storage s3://bucket/runs"
    )


def test_an_unknown_key_is_refused_by_the_reader(tmp_path: Path) -> None:
    text = (
        BASE + '[targets.c]\nkind = "ray"\naddress = "http://h:8265"\nstorage = "/s"\nnodes = 2\n'
    )
    with pytest.raises(ConfigError, match=r"unknown field `targets\.c\.nodes`"):
        load_settings(write(tmp_path, text), {})


def test_each_problem_is_one_line_naming_its_key() -> None:
    bad = RayTarget(
        address="ray.example.com:8265",
        storage=" ",
        token_env="not a name",
        headers={"X Bad": "v"},
        num_workers=0,
        resources_per_worker={"GPU": -1},
        request_secs=0,
    )
    assert problems("c", bad) == [
        "targets.c.address must be an http(s):// URL, not 'ray.example.com:8265'",
        "targets.c.storage is empty: a shared path or a URI such as s3://bucket/runs",
        "targets.c.token_env must be an environment variable's name",
        "targets.c.headers.X Bad is not a valid HTTP header",
        "targets.c.num_workers must be 1 or more, not 0",
        "targets.c.resources_per_worker.GPU must be 0 or more",
        "targets.c.request_secs must be more than 0",
    ]
    unmounted = RayTarget(address="http://h:8265", storage="s3://b/runs")
    assert problems("c", unmounted) == [
        "targets.c.node_storage is not set: say where the nodes mount s3://b/runs"
    ]


def test_the_token_comes_from_the_environment_and_is_never_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = RayTarget(
        address="http://h:8265",
        storage="/s",
        token_env="OB_T_RAY_TOKEN",
        headers={"X-Team": "ml"},
        header_envs={"X-Proxy-Secret": "OB_T_PROXY"},
    )
    monkeypatch.delenv("OB_T_RAY_TOKEN", raising=False)
    with pytest.raises(ConfigError, match=r"^targets\.c\.token_env names \$OB_T_RAY_TOKEN, wh"):
        request_headers("c", target)
    monkeypatch.setenv("OB_T_RAY_TOKEN", "tok-0123456789abcdef")
    with pytest.raises(ConfigError, match=r"targets\.c\.header_envs\.X-Proxy-Secret names"):
        request_headers("c", target)
    monkeypatch.setenv("OB_T_PROXY", "proxy-secret-0123456789")
    headers = request_headers("c", target)
    assert headers["authorization"] == "Bearer tok-0123456789abcdef"
    assert headers["X-Proxy-Secret"] == "proxy-secret-0123456789"
    assert headers["X-Team"] == "ml"
    said = redact.redact("sent tok-0123456789abcdef and proxy-secret-0123456789")
    assert "tok-0123456789abcdef" not in said
    assert "proxy-secret-0123456789" not in said


def test_the_kind_refuses_keep_pod_and_a_bad_table_before_connecting() -> None:
    good = RayTarget(address="http://h:8265", storage="/s")
    with pytest.raises(UsageError, match="--keep-pod only applies to a runpod target"):
        RAY.check("c", good, JobNeeds(keep=True))
    with pytest.raises(ConfigError, match=r"^targets\.c\.address must be an http\(s\):// URL"):
        RAY.check("c", attrs.evolve(good, address="h:8265"), JobNeeds())
    RAY.check("c", good, JobNeeds())
    assert RAY.checks(good) == JobChecks()
