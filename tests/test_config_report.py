"""`config check`'s lines: targets as the reference prints them, URL credentials masked."""

from __future__ import annotations

from pathlib import Path

import pytest

from overbrainer.config.errors import ConfigError
from overbrainer.config.load import load_settings
from overbrainer.config.report import (
    deprecation_warnings,
    report_lines,
    shown_url,
    target_summary,
)
from overbrainer.config.settings import DEFAULT_IMAGE, DEFAULT_RUNPOD_IMAGE
from tests.config_support import COMPLETE, write

ENV = {
    "OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL": "https://user:sk-url-SECRET@openrouter.ai/v1",
    "OVERBRAINER_TARGETS__BOX__HOST": "me@gpu-box",
}


def test_each_kind_of_target_is_one_line_with_its_defaults(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, COMPLETE), dict(ENV))
    lines = report_lines(settings)
    assert "targets.local = local, podman " + DEFAULT_IMAGE in lines
    # The host came from the environment.
    assert (
        "targets.box = ssh me@gpu-box in /data/overbrainer, native, venv ~/axolotl  (env)" in lines
    )
    assert "targets.box.ssh_client = openssh" in lines
    assert (
        "targets.cloud = runpod 1x [NVIDIA H100 80GB HBM3, NVIDIA A100 80GB PCIe], max 6h, "
        f"max $20, image {DEFAULT_RUNPOD_IMAGE}, venv /workspace/axolotl-venv, disk 80 GB, "
        "boot grace 20 min, retrieve grace 30 min, data centers EU-RO-1, "
        "network volume vol123 (grows up to 200 GB)"
    ) in lines
    assert "targets.cloud.ssh_client = openssh" in lines
    assert not [line for line in lines if line.startswith("targets.local.ssh_client")]


def test_a_native_target_without_venv_says_axolotl_comes_from_path(tmp_path: Path) -> None:
    text = COMPLETE.replace('runtime = "docker"\nengine = "podman"', 'runtime = "native"')
    settings = load_settings(write(tmp_path, text), dict(ENV))
    assert target_summary(settings.targets["local"]) == "local, native, venv (axolotl on PATH)"


def test_the_ssh_client_variable_wins_and_is_named(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, COMPLETE), dict(ENV))
    lines = report_lines(settings, ssh_client_env=" builtin ")
    assert "targets.box.ssh_client = builtin (OVERBRAINER_SSH_CLIENT)" in lines
    with pytest.raises(ConfigError, match="OVERBRAINER_SSH_CLIENT: must be openssh or builtin"):
        report_lines(settings, ssh_client_env="putty")


def test_url_credentials_are_masked(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, COMPLETE), dict(ENV))
    lines = report_lines(settings)
    assert "providers.openrouter.base_url = https://***@openrouter.ai/v1  (env)" in lines
    assert not [line for line in lines if "SECRET" in line]
    assert shown_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
    assert shown_url("http://k@[::1]:80/a@b") == "http://***@[::1]:80/a@b"


def test_hub_model_id_is_a_deprecation_warning(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, COMPLETE), dict(ENV))
    assert deprecation_warnings(settings) == []
    text = COMPLETE.replace("evals_per_epoch = 2\n", 'evals_per_epoch = 2\nhub_model_id = "me/x"\n')
    settings = load_settings(write(tmp_path, text), dict(ENV))
    assert deprecation_warnings(settings) == [
        "training.hub_model_id is deprecated: set [hub] repo instead "
        "(`overbrainer migrate` moves it)"
    ]


@pytest.mark.parametrize(
    "url",
    ["sentinel.host/api/v1", "ftp://sentinel.host/v1", "http://[::1/v1", "https://sentinel/v1?x=1"],
)
def test_a_base_url_that_is_not_http_is_a_configuration_error(tmp_path: Path, url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(
            write(tmp_path, COMPLETE), {**ENV, "OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL": url}
        )
    assert caught.value.exit_code == 2
    assert caught.value.problems == (
        "providers.openrouter.base_url: must be http(s)://host[:port][/path], "
        "such as https://openrouter.ai/api/v1",
    )
    assert url not in caught.value.message
