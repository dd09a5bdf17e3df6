"""`config check --json` as a real subprocess against the stub provider: per role and target
the facts of the lines, and a failing check's document with its error and exit code."""

from __future__ import annotations

import json
from pathlib import Path

from overbrainer.devtools.stub_provider import open_stub
from tests.pipeline_support import PRICES, TRAINING, make_project, overbrainer

KEY = "sk-test-SECRET-4242"
WRONG = "sk-wrong-SECRET-1"
NO_AXOLOTL = "/usr/bin:/bin"
TRAINING_PROBLEM = (
    "target `local` cannot train: axolotl is not on PATH (set targets.local.venv to Axolotl's "
    "virtual environment); `config check --no-train` checks a dataset-only run (`run --no-train`)"
)


async def test_json_gives_settings_roles_secrets_and_online_verdicts(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    env = {"OVERBRAINER_PROVIDERS__STUB__API_KEY": KEY}
    async with open_stub() as stub:
        stub.models, stub.api_key = PRICES, KEY
        text = await overbrainer(
            root, "config", "check", "--resolve", "--online", url=stub.url, env=env
        )
        result = await overbrainer(
            root, "config", "check", "--resolve", "--online", "--json", url=stub.url, env=env
        )
    assert result.code == 0, result.stderr
    assert KEY not in result.stdout + result.stderr
    found = json.loads(result.stdout)  # stdout holds the document alone
    assert (found["command"], found["exit_code"], found["error"]) == ("config check", 0, None)
    # Every line of the text is a setting, a secret or an online verdict, on stderr now.
    assert all(line in result.stderr for line in text.out_lines)
    settings = {item["key"]: item for item in found["settings"]}
    assert settings["providers.stub.api_key"] == {
        "key": "providers.stub.api_key",
        "value": "***",
        "env": True,
    }
    assert settings["roles.parent"]["value"].startswith("stub/parent-model (reasoning: ")
    assert "pipeline" in settings
    parent = found["roles"]["roles.parent"]
    assert (parent["provider"], parent["model"], parent["ok"], parent["problems"]) == (
        "stub",
        "parent-model",
        True,
        [],
    )
    assert parent["online"]["works"] is True
    assert parent["online"]["line"] in text.out_lines
    assert found["secrets"] == [
        {"key": "providers.stub.api_key", "resolved": True, "problem": None}
    ]
    assert (found["targets"], found["problems"]) == ({}, [])


async def test_a_failing_check_is_a_document_with_its_error_and_exit_2(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", pipeline=TRAINING)
    env = {"OVERBRAINER_PROVIDERS__STUB__API_KEY": WRONG, "PATH": NO_AXOLOTL}
    async with open_stub() as stub:
        stub.models, stub.api_key = PRICES, KEY
        result = await overbrainer(
            root, "config", "check", "--online", "--json", url=stub.url, env=env, limit=60
        )
    assert result.code == 2
    assert WRONG not in result.stdout + result.stderr
    found = json.loads(result.stdout)
    assert found["exit_code"] == 2
    cannot_work = "roles.generator and roles.parent cannot work (see above)"
    assert found["problems"] == [TRAINING_PROBLEM, cannot_work]
    assert (
        found["error"] == f"the configuration cannot work:\n  {TRAINING_PROBLEM}\n  {cannot_work}"
    )
    generator = found["roles"]["roles.generator"]
    assert (generator["ok"], generator["problems"]) == (False, [cannot_work])
    assert generator["online"] == {
        "works": False,
        "line": "roles.generator (stub, gen-model): reachable, key refused (HTTP 401)",
    }
    assert found["targets"]["local"] == {
        "kind": "local",
        "summary": found["targets"]["local"]["summary"],
        "training": True,
        "axolotl_checked": True,
        "axolotl": None,
        "ok": False,
        "problems": [TRAINING_PROBLEM],
    }
    assert found["secrets"] is None  # not asked for: no --resolve


async def test_json_without_a_project_is_a_document_with_exit_2(tmp_path: Path) -> None:
    result = await overbrainer(tmp_path, "config", "check", "--json", url="http://127.0.0.1:9/v1")
    assert result.code == 2
    found = json.loads(result.stdout)
    assert found["exit_code"] == 2
    assert found["error"].startswith("cannot read ")
    assert "roles" not in found
